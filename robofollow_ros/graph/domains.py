"""The ROS domains of N graphs run side by side: graph ``i`` runs in ``ROS_DOMAIN_ID + i``.

One rule for the launcher, the launch file and the evaluator, so they always agree on where each graph is. With one
graph nothing changes (the graph runs in the user's domain, whatever it is). With several, every domain of the range
must be one that DDS can use on Linux: at most 232 (the RTPS port formula overflows above), and not 102-214, whose
ports fall into the kernel's ephemeral port range (ROS 2's domain ID guidance); the range is refused whole otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from robofollow_ros.errors import GraphError

DOMAIN_VARIABLE = 'ROS_DOMAIN_ID'
MAX_DOMAIN = 232
EPHEMERAL_DOMAINS = range(102, 215)


def base_domain(environment: Mapping[str, str] | None = None) -> int:
    """The user's ROS domain (``ROS_DOMAIN_ID``, 0 when unset).

    Raises:
        GraphError: it is not a whole number from 0 to 232.
    """
    text = (os.environ if environment is None else environment).get(DOMAIN_VARIABLE, '').strip()
    if not text:
        return 0
    try:
        domain = int(text)
    except ValueError:
        raise GraphError(f'{DOMAIN_VARIABLE}={text!r} is not a whole number') from None
    if not 0 <= domain <= MAX_DOMAIN:
        raise GraphError(f'{DOMAIN_VARIABLE}={domain} is outside 0-{MAX_DOMAIN}')
    return domain


def graph_domains(base: int, workers: int) -> list[int]:
    """The domains of ``workers`` graphs starting at ``base``.

    Raises:
        GraphError: a range that leaves the usable domains.
    """
    domains = list(range(base, base + workers))
    if workers == 1:
        return domains
    last = domains[-1]
    if last > MAX_DOMAIN:
        raise GraphError(
            f'{workers} graphs from {DOMAIN_VARIABLE}={base} need domains {base}-{last}, beyond {MAX_DOMAIN}; '
            f'set {DOMAIN_VARIABLE} to at most {MAX_DOMAIN - workers + 1}'
        )
    clashing = [domain for domain in domains if domain in EPHEMERAL_DOMAINS]
    if clashing:
        which = f'{clashing[0]}' if len(clashing) == 1 else f'{clashing[0]}-{clashing[-1]}'
        raise GraphError(
            f'{workers} graphs from {DOMAIN_VARIABLE}={base} need domains {base}-{last}, and {which} fall among '
            f'the ephemeral ports (domains 102-214); choose a range within 0-101 or 215-{MAX_DOMAIN}'
        )
    return domains


def parse_workers(text: object) -> int:
    """The ``workers`` launch argument or parameter as a number of graphs.

    Raises:
        GraphError: not a whole number of at least 1.
    """
    try:
        workers = int(str(text))
    except ValueError:
        raise GraphError(f'workers must be a whole number (got {text!r})') from None
    if workers < 1:
        raise GraphError(f'workers must be at least 1 (got {workers})')
    return workers
