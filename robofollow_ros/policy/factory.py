"""Builds a policy from a name: a built-in backend or a ``module:function`` factory (protocol §5.1)."""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.base import check_interface

BUILTIN_POLICIES: dict[str, str] = {
    'expert': 'robofollow_ros.sim.expert:ExpertPolicy',
    'blind': 'robofollow_ros.sim.expert:BlindPolicy',
    'hold': 'robofollow_ros.policy.hold:HoldPolicy',
    'replay': 'robofollow_ros.bags.replay:ReplayPolicy',
    'openpi': 'robofollow_ros.policy.openpi:OpenpiPolicy',
    'robotwin-tcp': 'robofollow_ros.policy.robotwin_tcp:RobotwinTcpPolicy',
    'gr00t': 'robofollow_ros.policy.gr00t:Gr00tPolicy',
}
OWN_INTERPRETER_POLICIES: dict[str, str] = {
    'lerobot': 'robofollow_ros.policy.lerobot_policy:LeRobotPolicy',
    'lerobot-async': 'robofollow_ros.policy.lerobot_async:LeRobotAsyncPolicy',
}
"""Built-in backends that run in their own process under another interpreter (``policy.interpreters``), in the
policy sandbox like a ``module:function`` policy (``--trusted-policy``: in this process, which then needs their
dependencies)."""
REQUIRED_KWARGS: dict[str, tuple[str, ...]] = {'lerobot': ('path',), 'lerobot-async': ('checkpoint', 'policy_type')}
REQUIRED_KWARGS_EXAMPLE = {
    'lerobot': '{"path": "<.../pretrained_model>"}',
    'lerobot-async': '{"policy_type": "act", "checkpoint": "<pretrained_model on the server>"}',
}
PRIVILEGED_POLICIES = frozenset({'expert', 'blind'})
"""Built-in reference policies granted the task and the scene's ground-truth poses (sim only).

Privilege is granted by name here and nowhere else: a ``module:function`` policy is never privileged,
whatever it defines (``bind_task``) or returns (even the expert's class)."""

Isolation = Literal['sandbox', 'process', 'trusted', 'built-in']
"""How a policy runs, as every record, ``run.json`` and report says (``isolation``):

``sandbox``: a ``module:function`` policy in its own process inside the policy sandbox
(``robofollow_ros.policy.isolation.sandbox``: own user, PID, network, IPC and mount namespaces), which holds
nothing of the simulator, the task or the referee and reaches neither the graph nor the run's files; ``process``:
the same process without the sandbox (runs recorded before the sandbox existed); ``trusted``: a
``module:function`` policy in the evaluator's process, because the user said ``--trusted-policy``; ``built-in``:
one of ``BUILTIN_POLICIES``, project code in the evaluator's process (``openpi``, ``robotwin-tcp`` and ``gr00t`` are
clients of a policy that runs elsewhere anyway)."""


def _split(reference: str) -> tuple[str, str]:
    module_name, _, attribute = reference.partition(':')
    if not module_name or not attribute:
        raise PolicyError(f'policy factory must look like "module:function", got {reference!r}')
    return module_name, attribute


def _check_findable(reference: str) -> None:
    """Refuse a ``module:function`` whose top-level package cannot be found, without running any of its code.

    The policy is imported in its own process only; finding a top-level name executes nothing (a dotted name
    would run its parent packages' ``__init__``), so deeper mistakes surface when the policy is built.
    """
    module_name, _ = _split(reference)
    top = module_name.split('.', 1)[0]
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError) as error:
        raise PolicyError(f'cannot import policy module {module_name!r}: {error}') from error
    if found is None:
        raise PolicyError(f'cannot import policy module {module_name!r}: No module named {top!r}')


def load_reference(reference: str) -> Any:
    """The attribute a ``module:attribute`` reference names, imported now.

    Raises:
        PolicyError: the module cannot be imported or lacks the attribute.
    """
    module_name, attribute = _split(reference)
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
        factory: the class or function that builds an instance in this process; ``None`` for a policy that
            runs in its own process (``isolation == 'sandbox'``), whose module this process never imports.
        kwargs: keyword arguments for every instance.
        isolation: where instances run (``Isolation``).
        interpreter: the Python its own process runs under (``None``: the evaluator's).
        readable: folders its process must read (another interpreter's environment, a checkpoint named in
            ``kwargs``), shown to its sandbox.
    """

    name: str
    privileged: bool
    factory: Callable[..., Any] | None = field(repr=False, compare=False)
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    isolation: Isolation = 'trusted'
    interpreter: str | None = None
    readable: tuple[str, ...] = ()

    def build(self) -> Any:
        """A new policy instance in this process (``GuardedPolicy`` builds isolated ones in their process).

        Raises:
            PolicyError: the factory rejects the keyword arguments, raises, or returns an object without
                ``reset``, ``set_instruction`` and ``predict``.
        """
        if self.factory is None:
            raise PolicyError(f'policy {self.name!r} runs in its own process: build it with GuardedPolicy')
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


def policy_isolation(name: str, *, trusted: bool) -> Isolation:
    """Where the policy ``name`` runs: built-ins in-process, others in the sandbox unless ``trusted``."""
    if name in BUILTIN_POLICIES:
        return 'built-in'
    return 'trusted' if trusted else 'sandbox'


def resolve_policy(
    name: str, *, kwargs: Mapping[str, Any] | None = None, trusted: bool = False, python: str | None = None
) -> PolicyFactory:
    """Look ``name`` up (a built-in or an importable ``module:function``) without building anything.

    A ``module:function`` policy runs in its own sandboxed process unless ``trusted`` (``--trusted-policy``): its
    module is then never imported here, only its top-level package is looked for. ``python`` (``--policy-python``)
    runs that process under another interpreter, whose environment holds the policy's dependencies (and its
    module, which is then not looked for here); it also replaces the default interpreter of
    ``OWN_INTERPRETER_POLICIES``.

    Raises:
        PolicyError: unknown name, module not importable, (in-process) no such attribute, a policy to sandbox
            on a machine where the sandbox cannot be made (``--trusted-policy`` is then the user's decision), or
            ``python`` for a policy that runs in this process or naming no interpreter.
    """
    reference = BUILTIN_POLICIES.get(name) or OWN_INTERPRETER_POLICIES.get(name, name)
    if ':' not in reference:
        known = ', '.join(sorted([*BUILTIN_POLICIES, *OWN_INTERPRETER_POLICIES]))
        raise PolicyError(f'unknown policy {name!r}: use one of {known} or "module:function"')
    isolation = policy_isolation(name, trusted=trusted)
    if python is not None and isolation != 'sandbox':
        where = '--trusted-policy runs it' if isolation == 'trusted' else 'built-in policies run'
        raise PolicyError(f'--policy-python is for a policy in its own process: {where} in this one ({name!r})')
    interpreter = None
    if isolation == 'sandbox':
        from robofollow_ros.policy.isolation.sandbox import sandbox_problem

        problem = sandbox_problem()
        if problem is not None:
            raise PolicyError(
                f'{problem}; without the sandbox, --trusted-policy runs {name!r} in this process, unprotected'
            )
        factory = None
        if name in OWN_INTERPRETER_POLICIES:
            interpreter = _interpreter_for(name, kwargs, python)
        elif python is not None:
            interpreter = _checked_python(python)
        if python is None:
            _check_findable(reference)
    else:
        factory = load_reference(reference)
    return PolicyFactory(
        name=name,
        privileged=name in PRIVILEGED_POLICIES,
        kwargs=dict(kwargs or {}),
        factory=factory,
        isolation=isolation,
        interpreter=interpreter,
        readable=_readable_for(name, interpreter, kwargs),
    )


def _checked_python(python: str) -> str:
    from robofollow_ros.policy.interpreters import checked_python

    return checked_python(python)


def _readable_for(name: str, interpreter: str | None, kwargs: Mapping[str, Any] | None) -> tuple[str, ...]:
    """What the sandbox must let a policy under another interpreter read: that interpreter's environment and, for
    ``OWN_INTERPRETER_POLICIES``, the checkpoint (``path``)."""
    if interpreter is None:
        return ()
    from robofollow_ros.policy.interpreters import environment_folder

    checkpoint = kwargs.get('path') if name == 'lerobot' and kwargs else None
    return (str(environment_folder(interpreter)), *([str(checkpoint)] if checkpoint else []))


def _interpreter_for(name: str, kwargs: Mapping[str, Any] | None, python: str | None) -> str:
    """The interpreter an ``OWN_INTERPRETER_POLICIES`` backend runs under (``python`` if given); refuses keyword
    arguments without the checkpoint's path (``None``: only looked up, nothing will be built from them).

    Raises:
        PolicyError: no such interpreter, or no checkpoint path in the keyword arguments.
    """
    from robofollow_ros.policy.interpreters import lerobot_python

    if kwargs is not None and name in REQUIRED_KWARGS and not all(kwargs.get(key) for key in REQUIRED_KWARGS[name]):
        raise PolicyError(f"policy {name!r} needs its checkpoint: --policy-kwargs '{REQUIRED_KWARGS_EXAMPLE[name]}'")
    return lerobot_python() if python is None else _checked_python(python)


def make_policy(name: str, *, kwargs: Mapping[str, Any] | None = None) -> Any:
    """Return a new policy in this process: ``name`` is a built-in (``expert``, ``blind``, ``hold``) or
    ``module:function`` (trusted: it runs here)."""
    return resolve_policy(name, kwargs=kwargs, trusted=True).build()
