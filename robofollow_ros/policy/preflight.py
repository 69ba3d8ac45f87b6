"""Checks of a built-in policy's options that would fail every trial, made once before a run starts.

A policy is built per trial, inside the run, so a bad option (a replay path that does not exist) would
otherwise end as a build error in every trial's record; these checks refuse it before the run folder is
touched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from robofollow_ros.errors import PolicyError


def _check_replay(kwargs: Mapping[str, Any]) -> None:
    from robofollow_ros.policy.replay import load_joint_rows

    path = kwargs.get('path')
    if not isinstance(path, str) or not path:
        raise PolicyError('--policy replay needs --policy-kwargs \'{"path": "<episode bag or trajectory JSON>"}\'')
    load_joint_rows(path)


CHECKS: dict[str, Callable[[Mapping[str, Any]], None]] = {'replay': _check_replay}
"""The built-in policies with options worth checking before a run, by name."""


def check_policy_options(name: str, kwargs: Mapping[str, Any]) -> None:
    """Refuse options of policy ``name`` that no trial could run with (nothing to check for most policies).

    Raises:
        PolicyError: naming the policy and what is wrong (e.g. a replay source that is missing or has no
            arm joints).
    """
    check = CHECKS.get(name)
    if check is None:
        return
    try:
        check(kwargs)
    except PolicyError as error:
        message = str(error)
        raise PolicyError(message if message.startswith('--policy') else f'--policy {name}: {message}') from None
