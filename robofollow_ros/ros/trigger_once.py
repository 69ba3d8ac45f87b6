"""Call one std_srvs/Trigger service once and print its answer (for ``robofollow operator``, which runs this module
as its own process: the command line never imports rclpy).

``python -m robofollow_ros.ros.trigger_once /robofollow/stop --timeout 5`` waits for the service, calls it, prints
its message and exits 0 when it reports success, 1 when it answers failure, 2 when no such service answered in time.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

EXIT_REFUSED = 1
EXIT_NO_SERVICE = 2


def call(service: str, *, timeout_s: float) -> tuple[bool, str] | None:
    """(success, message) of one call of the Trigger ``service``, or None when it did not answer in time."""
    from std_srvs.srv import Trigger

    from robofollow_ros.ros.runtime import one_shot_node

    with one_shot_node('robofollow_operator') as (node, executor):
        client: Any = node.create_client(Trigger, service)
        if not client.wait_for_service(timeout_sec=timeout_s):
            return None
        future = client.call_async(Trigger.Request())
        executor.spin_until_future_complete(future, timeout_sec=timeout_s)
        answer: Any = future.result() if future.done() else None
        if answer is None:
            return None
        return bool(answer.success), str(answer.message)


def main(argv: Sequence[str] | None = None) -> int:
    """Call the service; print its message (or why there is none)."""
    parser = argparse.ArgumentParser(prog='trigger_once', description=__doc__)
    parser.add_argument('service', help='the std_srvs/Trigger service, e.g. /robofollow/stop')
    parser.add_argument('--timeout', type=float, default=5.0, help='seconds to wait for the service (default 5)')
    args = parser.parse_args(argv)
    answer = call(args.service, timeout_s=args.timeout)
    if answer is None:
        print(f'no {args.service} service answered within {args.timeout:g} s', file=sys.stderr)
        return EXIT_NO_SERVICE
    success, message = answer
    print(message or ('done' if success else 'refused'), file=sys.stdout if success else sys.stderr)
    return 0 if success else EXIT_REFUSED


if __name__ == '__main__':
    sys.exit(main())
