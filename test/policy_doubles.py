"""Policies that misbehave on purpose, importable as ``policy_doubles:<name>`` (test/ is on the path)."""

from __future__ import annotations

import os
import time

import numpy as np

seen: list[object] = []
bound: list[object] = []
instructions: list[str] = []
built: list[object] = []


class HoldingPolicy:
    """Holds the observed state for three rows; ``sleep`` (or ``ROBOFOLLOW_TEST_SLEEP``, which reaches only a trusted
    policy: the sandbox clears the environment) seconds of thinking per query.

    With ``thinking`` (or ``ROBOFOLLOW_TEST_THINKING``) set to a path, each query first creates that file.
    """

    needs_images = False

    def __init__(self, rows: int = 3, sleep: float | None = None, thinking: str | None = None) -> None:
        self.rows = rows
        self.sleep = float(os.environ.get('ROBOFOLLOW_TEST_SLEEP', '0')) if sleep is None else float(sleep)
        self.thinking = os.environ.get('ROBOFOLLOW_TEST_THINKING') if thinking is None else thinking
        built.append(self)

    def reset(self) -> None:
        pass

    def set_instruction(self, text: str) -> None:
        instructions.append(text)

    def predict(self, observation):
        if self.thinking:  # tells a test, without guessing at timing, that a query is under way
            open(self.thinking, 'a').close()
        time.sleep(self.sleep)
        return np.tile(np.asarray(observation.state, dtype=np.float32), (self.rows, 1))

    def close(self) -> None:
        pass


class SpyPolicy(HoldingPolicy):
    """Looks at the cameras, keeps every observation and would take the task if it were offered."""

    needs_images = True

    def bind_task(self, task, layout) -> None:
        bound.append((task, layout))

    def predict(self, observation):
        seen.append(observation)
        return super().predict(observation)


def raising_factory():
    raise RuntimeError('checkpoint not found')


def not_a_policy():
    return object()


class ResetRaises(HoldingPolicy):
    def reset(self) -> None:
        raise ValueError('reset exploded')


class InstructionRaises(HoldingPolicy):
    def set_instruction(self, text: str) -> None:
        raise LookupError('no tokenizer')


class ExitingPolicy(HoldingPolicy):
    def predict(self, observation):
        raise SystemExit(3)


class InterruptingPolicy(HoldingPolicy):
    def predict(self, observation):
        raise KeyboardInterrupt


class BoolPolicy(HoldingPolicy):
    def predict(self, observation):
        return np.ones((2, 14), dtype=bool)


class OneDimensionalPolicy(HoldingPolicy):
    def predict(self, observation):
        return np.asarray(observation.state, dtype=np.float32)


class SlowFirstInstance(HoldingPolicy):
    """The first instance built never answers its first query in time; later instances are fine.

    Instances may live in separate processes, so the file ``marker`` counts them (a line ``slow`` or ``fast`` each).
    """

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.slow = not os.path.exists(marker)
        with open(marker, 'a', encoding='utf-8') as stream:
            stream.write('slow\n' if self.slow else 'fast\n')

    def predict(self, observation):
        if self.slow:
            time.sleep(60.0)
        return super().predict(observation)


SECRET_MODULES = (
    'mujoco',
    'rclpy',
    'robofollow_ros.sim',
    'robofollow_ros.evaluation',
    'robofollow_ros.referee',
    'robofollow_ros.benchmark',
    'robofollow_ros.ros',
    'robofollow_ros.nodes',
    'robofollow_ros.graph',
)
"""What a user policy must not find in its process: the simulator, the evaluator, the task and the referee."""


def _secret_module(name: str) -> bool:
    return any(name == prefix or name.startswith(prefix + '.') for prefix in SECRET_MODULES)


def _reachable() -> list[object]:
    """Every object reachable from any thread's stack and from the garbage collector's lists, and their
    attributes and items (one level deep)."""
    import gc
    import sys

    roots: list[object] = []
    for frame in sys._current_frames().values():
        while frame is not None:
            roots.extend(frame.f_locals.values())
            frame = frame.f_back
    roots.extend(gc.get_objects())
    found: list[object] = []
    for item in roots:
        found.append(item)
        if isinstance(item, dict):
            found.extend(item.values())
        elif isinstance(item, (list, tuple)):
            found.extend(item)
        elif not isinstance(item, type):
            attributes = getattr(item, '__dict__', None)
            if isinstance(attributes, dict):
                found.extend(attributes.values())
    return found


def snoop() -> dict[str, object]:
    """Instances of the simulator's, the evaluator's, the task's or the referee's types within reach, by type name."""
    secrets: dict[str, object] = {}
    for item in _reachable():
        kind = type(item)
        module = getattr(kind, '__module__', '')
        module = module if isinstance(module, str) else ''
        if kind.__name__ in ('MjData', 'MjModel') or _secret_module(module):
            secrets.setdefault(f'{module}.{kind.__name__}', item)
    return secrets


def lift_objects(secrets: dict[str, object]) -> int:
    """Raise every free-floating body of every simulator found by 0.3 m through ``qpos``; how many were moved."""
    models = [item for name, item in secrets.items() if name.endswith('MjModel')]
    datas = [item for name, item in secrets.items() if name.endswith('MjData')]
    lifted = 0
    for model in models:
        for data in datas:
            try:
                for joint in range(model.njnt):
                    if int(model.jnt_type[joint]) == 0:  # a free joint: an object on the table
                        data.qpos[int(model.jnt_qposadr[joint]) + 2] += 0.3
                        lifted += 1
            except Exception:
                continue
    return lifted


class Snooper(HoldingPolicy):
    """Holds still like ``HoldingPolicy``, and in its first query searches its own process for the simulator
    (``MjData``), the task's ground truth and the referee, lifts every object it can reach through ``qpos``, and
    appends what it found (and what its process has imported) to the JSON-lines file ``report``."""

    def __init__(self, report: str) -> None:
        super().__init__()
        self.report = report
        self.done = False

    def predict(self, observation):
        if not self.done:
            import json
            import sys

            self.done = True
            secrets = snoop()
            entry = {
                'pid': os.getpid(),
                'found': sorted(secrets),
                'lifted': lift_objects(secrets),
                'modules': sorted(name for name in list(sys.modules) if _secret_module(name)),
            }
            with open(self.report, 'a', encoding='utf-8') as stream:
                stream.write(json.dumps(entry) + '\n')
        return super().predict(observation)


class ExitsOnce(HoldingPolicy):
    """Ends its process in its first query unless the file ``marker`` exists (then it holds): ``os._exit(7)``, or
    with ``how='signal'`` a SIGKILL to itself."""

    def __init__(self, marker: str, how: str = 'exit') -> None:
        super().__init__()
        self.marker = marker
        self.how = how

    def predict(self, observation):
        if not os.path.exists(self.marker):
            import signal

            with open(self.marker, 'w', encoding='utf-8') as stream:
                stream.write(str(os.getpid()))
            if self.how == 'signal':
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(7)
        return super().predict(observation)


class Hog(HoldingPolicy):
    """Allocates ``mebibytes`` MiB (and touches them) in every query."""

    def __init__(self, mebibytes: int = 1024) -> None:
        super().__init__()
        self.mebibytes = mebibytes

    def predict(self, observation):
        self.ballast = np.ones(self.mebibytes * 1024 * 1024, dtype=np.uint8)
        return super().predict(observation)


class Hangs(HoldingPolicy):
    """Never answers a query: appends its process id to the file ``pids`` as its first query starts, and sleeps."""

    def __init__(self, pids: str) -> None:
        super().__init__()
        self.pids = pids

    def predict(self, observation):
        with open(self.pids, 'a', encoding='utf-8') as stream:
            stream.write(f'{os.getpid()}\n')
        while True:
            time.sleep(1.0)


class WhereAmI(HoldingPolicy):
    """Appends its process id and its process's main module (``-m`` name) to the file ``pids`` when built."""

    def __init__(self, pids: str) -> None:
        import sys

        super().__init__()
        spec = getattr(sys.modules['__main__'], '__spec__', None)
        with open(pids, 'a', encoding='utf-8') as stream:
            stream.write(f'{os.getpid()} {spec.name if spec is not None else "-"}\n')


class Describer(HoldingPolicy):
    """Looks at the cameras and appends a description of each observation to the JSON-lines file ``report``."""

    needs_images = True

    def __init__(self, report: str) -> None:
        super().__init__()
        self.report = report
        self.instruction = None

    def set_instruction(self, text: str) -> None:
        self.instruction = text

    def predict(self, observation):
        import json

        def describe(array):
            return [list(array.shape), str(array.dtype), bool(array.flags.writeable)]

        entry = {
            'type': f'{type(observation).__module__}.{type(observation).__name__}',
            'images': {name: describe(image) for name, image in observation.images.items()},
            'state': describe(observation.state),
            'sums': {name: int(image.sum()) for name, image in observation.images.items()},
            'instruction': self.instruction,
            'pid': os.getpid(),
        }
        with open(self.report, 'a', encoding='utf-8') as stream:
            stream.write(json.dumps(entry) + '\n')
        return super().predict(observation)


class NetworkProbe(HoldingPolicy):
    """Prints whether 127.0.0.1:``port`` answers (it should: ``--policy-network``) and 127.0.0.1:``other_port``
    does not."""

    def __init__(self, port: int, other_port: int) -> None:
        super().__init__()
        self.port, self.other_port = int(port), int(other_port)

    def predict(self, observation):
        import socket

        try:
            with socket.create_connection(('127.0.0.1', self.port), timeout=10) as connection:
                connection.sendall(b'hello')
                print(f'allowed 127.0.0.1:{self.port} answered {connection.recv(64).decode()}', flush=True)
        except OSError as error:
            print(f'allowed 127.0.0.1:{self.port} failed: {error}', flush=True)
        try:
            socket.create_connection(('127.0.0.1', self.other_port), timeout=5).close()
            print(f'other 127.0.0.1:{self.other_port} answered', flush=True)
        except OSError:
            print(f'other 127.0.0.1:{self.other_port} refused', flush=True)
        return super().predict(observation)


class BatchingAffine:
    """A chunk (3 rows) that depends on the observation and the instruction only, answered one query at a time or
    batched (``predict_batch``, each call's size kept in ``batches``); a batch holding a state above ``fail_above``
    fails. Reads cam_high's centre pixel, which a wire's resizing with padding keeps."""

    needs_images = True

    def __init__(self, fail_above: float = float('inf')) -> None:
        self.fail_above = fail_above
        self.batches: list[int] = []
        self.instruction = ''

    def reset(self) -> None:
        pass

    def set_instruction(self, text: str) -> None:
        self.instruction = text

    @staticmethod
    def chunk(observation, instruction):
        image = observation.images['cam_high']
        centre = float(image[image.shape[0] // 2, image.shape[1] // 2, 0]) / 255.0
        state = np.asarray(observation.state, dtype=np.float32)
        rows = [state + 0.01 * (row + 1) * len(instruction or '') + centre for row in range(3)]
        return np.stack(rows).astype(np.float32)

    def predict(self, observation):
        return self.chunk(observation, self.instruction)

    def predict_batch(self, observations, instructions):
        self.batches.append(len(observations))
        if any(float(o.state[0]) > self.fail_above for o in observations):
            raise RuntimeError('the batch exploded')
        return [self.chunk(o, i) for o, i in zip(observations, instructions, strict=True)]
