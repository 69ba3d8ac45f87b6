"""Builds a policy from a name: a built-in backend or a ``module:function`` factory (protocol §5.1)."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any

from robofollow_ros.errors import PolicyError

BUILTIN_POLICIES: dict[str, str] = {
    'expert': 'robofollow_ros.sim.expert:ExpertPolicy',
    'blind': 'robofollow_ros.sim.expert:BlindPolicy',
    'hold': 'robofollow_ros.policy.hold:HoldPolicy',
    'replay': 'robofollow_ros.policy.replay:ReplayPolicy',
    'openpi': 'robofollow_ros.policy.openpi:OpenpiPolicy',
    'robotwin-tcp': 'robofollow_ros.policy.robotwin_tcp:RobotwinTcpPolicy',
}


def _load(reference: str) -> Any:
    module_name, _, attribute = reference.partition(':')
    if not module_name or not attribute:
        raise PolicyError(f'policy factory must look like "module:function", got {reference!r}')
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise PolicyError(f'cannot import policy module {module_name!r}: {error}') from error
    try:
        return getattr(module, attribute)
    except AttributeError as error:
        raise PolicyError(f'module {module_name!r} has no {attribute!r}') from error


def parse_policy_kwargs(text: str | None) -> dict[str, Any]:
    """Parse ``--policy-kwargs`` (a JSON object) into keyword arguments."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise PolicyError(f'policy keyword arguments are not valid JSON: {error}') from error
    if not isinstance(value, dict):
        raise PolicyError('policy keyword arguments must be a JSON object')
    return value


def make_policy(name: str, *, kwargs: Mapping[str, Any] | None = None) -> Any:
    """Return a new policy: ``name`` is a built-in (``expert``, ``blind``, ``hold``) or ``module:function``."""
    reference = BUILTIN_POLICIES.get(name, name)
    if ':' not in reference:
        known = ', '.join(sorted(BUILTIN_POLICIES))
        raise PolicyError(f'unknown policy {name!r}: use one of {known} or "module:function"')
    factory = _load(reference)
    try:
        return factory(**dict(kwargs or {}))
    except TypeError as error:
        raise PolicyError(f'cannot build policy {name!r}: {error}') from error
