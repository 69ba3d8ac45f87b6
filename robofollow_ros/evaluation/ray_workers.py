"""``robofollow eval --ray [ADDRESS]``: the trials spread over Ray actors, one simulator per actor.

Ray is the engine: each actor (one CPU) holds a ``TrialRunner``; this process, the driver, keeps the queue
of trials, gives every idle actor the next one and writes each result as it comes back. An actor lost with
its node raises ``RayActorError`` for its trial, which goes back to the front of the queue for the other
actors; its late answer, if any, is never read, so nothing is recorded twice. Lost actors are not replaced
(their node is gone); the run stops when none is left.

Ray is an optional extra (``pip install .[ray]``). Without an address, a Ray instance is started for the run
on this machine only and shut down after it: every listener of it (GCS, raylet, object manager, agents, the
workers' and this process's gRPC servers) is bound to 127.0.0.1, because the instance runs without
authentication (``RAY_AUTH_MODE=disabled`` unless set otherwise) and anyone who reaches one of those ports can
run code here. Ray binds to loopback only when its node address
is exactly 127.0.0.1, which it chooses from ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` read when ``ray`` is first
imported (``_node_ip_address="127.0.0.1"`` alone is rewritten to the machine's address, and any other loopback
address binds every interface); the node's address is checked after start-up and the run refused otherwise.
With an address, securing the cluster is the user's business (docs/evaluation.md).

Ray's start-up waits (for its GCS to listen, for this node's raylet to register) are the run's
``ray_start_timeout``, 30 s in Ray by default, which a busy machine exceeded; a start that fails anyway is
one line naming the option (``RoboFollowError``), not Ray's traceback.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from robofollow_ros.errors import RoboFollowError, WorkerLostError
from robofollow_ros.evaluation.dispatch import Binding, TrialQueue, new_binding, run_pool
from robofollow_ros.evaluation.identity import RunIdentity
from robofollow_ros.evaluation.options import SuiteOptions
from robofollow_ros.evaluation.records import Trial
from robofollow_ros.evaluation.results import TrialKey
from robofollow_ros.evaluation.runner import TrialResult, TrialRunner

LOOPBACK = '127.0.0.1'
LOOPBACK_ENVIRONMENT = {'RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER': '0'}
"""Imposed on a Ray instance started by the run: it binds every listener to 127.0.0.1."""
LOCAL_RAY_ENVIRONMENT = {
    **LOOPBACK_ENVIRONMENT,
    'RAY_USAGE_STATS_ENABLED': '0',
    'RAY_AUTH_MODE': 'disabled',
}
"""A Ray instance started by the run: loopback (imposed), and by default no statistics and no token file."""
HEALTH_CHECK = {'health_check_period_ms': 500, 'health_check_timeout_ms': 500, 'health_check_failure_threshold': 3}
"""A lost node is noticed in about two seconds (Ray's default: more than ten)."""
START_TIMEOUT_VARIABLES = ('RAY_gcs_server_port_wait_time_s', 'RAY_raylet_start_wait_time_s')
"""Ray's start-up waits, whole seconds: for the GCS to write its port, and for the node (this process's raylet,
or the cluster's) to be registered with the GCS, which ends in "The current node timed out during startup". The
second is a Ray config read from the environment by every Ray process, this one included, so it is set before
``ray`` is imported; Ray waits at least 30 s for the registration whatever it says."""


def import_ray(*, local: bool = False, start_timeout: float | None = None) -> Any:
    """The ``ray`` module; with ``local``, set up (before its first import) for an instance bound to loopback; with
    ``start_timeout``, Ray's start-up waits set to that many seconds (``START_TIMEOUT_VARIABLES``).

    Raises:
        RoboFollowError: Ray is not installed.
    """
    if start_timeout is not None:
        os.environ.update(dict.fromkeys(START_TIMEOUT_VARIABLES, str(math.ceil(start_timeout))))
    if local:
        for name, value in LOCAL_RAY_ENVIRONMENT.items():
            os.environ.setdefault(name, value)
        os.environ.update(LOOPBACK_ENVIRONMENT)
    try:
        import ray
    except ImportError as error:
        raise RoboFollowError('--ray needs Ray: pip install ".[ray]" (or pip install ray)') from error
    if local:
        # Ray read the variable when it was first imported: a process that imported it earlier would bind every
        # interface; its module constant is what the node address is chosen from at ``ray.init``.
        constants = getattr(getattr(ray, '_private', None), 'ray_constants', None)
        if constants is not None and getattr(constants, 'ENABLE_RAY_CLUSTER', False):
            constants.ENABLE_RAY_CLUSTER = False
    return ray


def check_loopback(ray: Any) -> None:
    """Refuse a Ray instance started for the run whose nodes are not on 127.0.0.1 (it would listen on every
    interface, without authentication).

    Raises:
        RoboFollowError: a node of the instance has another address (the instance is shut down first).
    """
    addresses = sorted({str(node.get('NodeManagerAddress')) for node in ray.nodes()} - {LOOPBACK})
    if addresses:
        ray.shutdown()
        raise RoboFollowError(
            f'the Ray instance started for this run is on {", ".join(addresses)}, not {LOOPBACK}: refusing to run '
            'it reachable from the network; start Ray yourself and pass its address to --ray'
        )


def connect_ray(*, address: str | None, cpus: int, start_timeout: float) -> tuple[Any, bool]:
    """Ray, joined to the cluster at ``address`` or, without one, to an instance started on this machine (bound to
    loopback, ``cpus`` CPUs, all of them when 0); and whether this call started it (the caller shuts it down).

    Raises:
        RoboFollowError: Ray is missing, or it did not start or join (one line; a timeout names the option).
    """
    ray = import_ray(local=not address, start_timeout=start_timeout)
    if ray.is_initialized():
        return ray, False
    try:
        if address:
            ray.init(address=address, logging_level='warning', log_to_driver=False)
        else:
            ray.init(
                address='local',
                num_cpus=cpus or None,
                include_dashboard=False,
                logging_level='warning',
                log_to_driver=False,
                _system_config=HEALTH_CHECK,
            )
    except Exception as error:  # Ray raises Exception, RuntimeError, ConnectionError... for a failed start
        ray.shutdown()
        raise _start_failure(error, address=address, start_timeout=start_timeout) from None
    if not address:
        check_loopback(ray)
    return ray, True


def _start_failure(error: Exception, *, address: str | None, start_timeout: float) -> RoboFollowError:
    """Ray's start-up error as one line, and what to do about a timeout."""
    reason = next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)
    what = f'could not join the Ray cluster at {address}' if address else 'the Ray instance for this run did not start'
    if 'timed out' not in reason.lower():
        return RoboFollowError(f'{what}: {reason}')
    return RoboFollowError(
        f'{what} within {start_timeout:g} s ({reason}); a busy machine may need longer: --ray-start-timeout SECONDS'
    )


class Simulator:
    """A Ray actor's state: one ``TrialRunner`` on the node the actor was placed on."""

    def __init__(self, options: SuiteOptions, identity: RunIdentity, policy_kwargs: dict[str, Any] | None) -> None:
        self.runner = TrialRunner(options, identity=identity, policy_kwargs=policy_kwargs)

    def run(self, trial: Trial) -> tuple[str, float, TrialResult]:
        """Run ``trial``; returns the node id, the seconds spent in the actor and the result."""
        import ray

        started = time.perf_counter()
        result = self.runner.run(trial)
        return ray.get_runtime_context().get_node_id(), time.perf_counter() - started, result

    def close(self) -> str | None:
        """Close the simulator and the policy."""
        return self.runner.close()


@dataclass
class _Actor:
    handle: Any
    binding: Binding
    trial: Trial | None = None
    sent: float = 0.0


class RayTrials:
    """Runs trials on Ray actors (``options.workers`` of them, or one per CPU of the cluster when 0).

    Attributes:
        placements: the Ray node id each trial ran on.
        overheads: per trial, the seconds between handing it out and receiving its result, less the seconds
            the actor spent running it (Ray's scheduling and transfer cost).
        lost: actors lost during ``results``.
    """

    def __init__(self, options: SuiteOptions, *, identity: RunIdentity) -> None:
        import_ray(local=not options.ray_address, start_timeout=options.ray_start_timeout)
        self.options = options
        self.identity = identity
        self.problems: list[str] = []
        self.placements: dict[TrialKey, str] = {}
        self.overheads: list[float] = []
        self.lost = 0

    def results(self, todo: Sequence[Trial]) -> Generator[TrialResult, None, None]:
        """Each trial's result as soon as an actor finishes it (in any order)."""
        ray, owned = connect_ray(
            address=self.options.ray_address, cpus=self.options.workers, start_timeout=self.options.ray_start_timeout
        )
        from ray.exceptions import RayActorError, RayTaskError

        remote = ray.remote(num_cpus=1, max_restarts=0)(Simulator)
        queue = TrialQueue(todo)
        pool = run_pool(self.options)
        count = self.options.workers or max(1, int(ray.cluster_resources().get('CPU', 1)))
        actors: list[_Actor] = []
        in_flight: dict[Any, _Actor] = {}
        try:
            for _ in range(min(count, len(todo))):
                binding = new_binding(self.options, pool)
                actors.append(_Actor(remote.remote(self.options, self.identity, binding.policy_kwargs), binding))
            while True:
                for actor in actors:
                    if actor.trial is None and queue:
                        actor.trial, actor.sent = queue.take(), time.perf_counter()
                        in_flight[actor.handle.run.remote(actor.trial)] = actor
                if not in_flight:
                    break
                (ref,), _ = ray.wait(list(in_flight), num_returns=1)
                actor = in_flight.pop(ref)
                trial, actor.trial = actor.trial, None
                assert trial is not None
                try:
                    node, seconds, result = ray.get(ref)
                except RayActorError as error:
                    self.lost += 1
                    actors.remove(actor)
                    ray.kill(actor.handle)
                    queue.put_back(trial, reason=f'Ray actor lost: {type(error).__name__}')
                    if not actors:
                        raise WorkerLostError(
                            'every Ray actor is lost; resume the run when the cluster is back'
                        ) from None
                    continue
                except RayTaskError as error:
                    raise error.as_instanceof_cause() from None
                endpoint = actor.binding.endpoint
                if pool is not None and endpoint is not None and pool.lost(endpoint, result.record):
                    queue.put_back(trial, reason=f'policy server {endpoint} is down', lost_simulator=False)
                    actors.remove(actor)
                    ray.kill(actor.handle)
                    binding = new_binding(self.options, pool)
                    actors.append(_Actor(remote.remote(self.options, self.identity, binding.policy_kwargs), binding))
                    continue
                self.overheads.append(time.perf_counter() - actor.sent - seconds)
                self.placements[trial.key] = node
                yield result
        finally:
            for actor in actors:
                ray.kill(actor.handle)
            if owned:
                ray.shutdown()
