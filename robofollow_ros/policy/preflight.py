"""Checks of a built-in policy's options that would fail every trial, made once before a run starts.

A policy is built per trial, inside the run, so a bad option (a replay path that does not exist) would
otherwise end as a build error in every trial's record; these checks refuse it before the run folder is
touched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.factory import load_reference

CHECKS: dict[str, str] = {'replay': 'robofollow_ros.bags.replay:check_replay_options'}
"""The built-in policies with options worth checking before a run, by name: ``module:function`` of a check that
raises ``PolicyError`` (imported when used, like ``factory.BUILTIN_POLICIES``)."""


def check_policy_options(name: str, kwargs: Mapping[str, Any]) -> None:
    """Refuse options of policy ``name`` that no trial could run with (nothing to check for most policies).

    Raises:
        PolicyError: naming the policy and what is wrong (e.g. a replay source that is missing or has no
            arm joints).
    """
    reference = CHECKS.get(name)
    if reference is None:
        return
    check: Callable[[Mapping[str, Any]], None] = load_reference(reference)
    try:
        check(kwargs)
    except PolicyError as error:
        message = str(error)
        raise PolicyError(message if message.startswith('--policy') else f'--policy {name}: {message}') from None
