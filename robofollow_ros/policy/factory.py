"""Builds a policy from a name: a built-in backend or a ``module:function`` factory (protocol §5.1)."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.base import check_interface

BUILTIN_POLICIES: dict[str, str] = {
    'expert': 'robofollow_ros.sim.expert:ExpertPolicy',
    'blind': 'robofollow_ros.sim.expert:BlindPolicy',
    'hold': 'robofollow_ros.policy.hold:HoldPolicy',
    'replay': 'robofollow_ros.policy.replay:ReplayPolicy',
    'openpi': 'robofollow_ros.policy.openpi:OpenpiPolicy',
    'robotwin-tcp': 'robofollow_ros.policy.robotwin_tcp:RobotwinTcpPolicy',
}
PRIVILEGED_POLICIES = frozenset({'expert', 'blind'})
"""Built-in reference policies granted the task and the scene's ground-truth poses (sim only).

Privilege is granted by name here and nowhere else: a ``module:function`` policy is never privileged,
whatever it defines (``bind_task``) or returns (even the expert's class)."""


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


@dataclass(frozen=True)
class PolicyFactory:
    """A resolved policy name: builds fresh instances, and says whether they are privileged.

    Attributes:
        name: the name given (built-in or ``module:function``).
        privileged: whether the policy receives the task and ground-truth poses (``PRIVILEGED_POLICIES``).
        factory: the class or function that builds an instance.
        kwargs: keyword arguments for every instance.
    """

    name: str
    privileged: bool
    factory: Callable[..., Any] = field(repr=False, compare=False)
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def build(self) -> Any:
        """A new policy instance.

        Raises:
            PolicyError: the factory rejects the keyword arguments, raises, or returns an object without
                ``reset``, ``set_instruction`` and ``predict``.
        """
        try:
            policy = self.factory(**dict(self.kwargs))
        except TypeError as error:
            raise PolicyError(f'cannot build policy {self.name!r}: {error}') from error
        except PolicyError:
            raise
        except Exception as error:  # user factories can fail in any way; the message must say which policy
            raise PolicyError(f'cannot build policy {self.name!r}: {type(error).__name__}: {error}') from error
        check_interface(policy, name=self.name)
        return policy


def resolve_policy(name: str, *, kwargs: Mapping[str, Any] | None = None) -> PolicyFactory:
    """Look ``name`` up (a built-in or an importable ``module:function``) without building anything.

    Raises:
        PolicyError: unknown name, module not importable, or no such attribute.
    """
    reference = BUILTIN_POLICIES.get(name, name)
    if ':' not in reference:
        known = ', '.join(sorted(BUILTIN_POLICIES))
        raise PolicyError(f'unknown policy {name!r}: use one of {known} or "module:function"')
    return PolicyFactory(
        name=name, privileged=name in PRIVILEGED_POLICIES, kwargs=dict(kwargs or {}), factory=_load(reference)
    )


def make_policy(name: str, *, kwargs: Mapping[str, Any] | None = None) -> Any:
    """Return a new policy: ``name`` is a built-in (``expert``, ``blind``, ``hold``) or ``module:function``."""
    return resolve_policy(name, kwargs=kwargs).build()
