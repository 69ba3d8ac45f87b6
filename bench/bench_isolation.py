"""Cost per query of a user policy in its own process against the same policy in-process (``--trusted-policy``).

Both sides call the same ``hold``-like user policy (``bench_isolation:ImageHold``: it looks at the three
cameras and holds the state) through ``GuardedPolicy`` with three 320x240x3 uint8 images and the 14-D state,
in this process and run, queries interleaved so that load from other processes hits both alike. Prints p50 and
p95 per query of each, and what isolation adds (target: at most 2 ms at p95); then the time to start a policy
process (fresh interpreter, build) against building the policy in-process.

Usage: ``.venv/bin/python bench/bench_isolation.py [--queries 2000]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

CAMERA_SHAPE = (240, 320, 3)
HOLD_ROWS = 5


class ImageHold:
    """``hold`` that asks for the cameras (so every query carries them) and reads a pixel of each."""

    needs_images = True

    def reset(self) -> None:
        """Nothing to forget."""

    def set_instruction(self, text: str) -> None:
        """Ignored."""

    def predict(self, observation: Any) -> np.ndarray:
        """The observed state ``HOLD_ROWS`` times."""
        assert all(image.shape == CAMERA_SHAPE for image in observation.images.values())
        state = np.asarray(observation.state, dtype=np.float32)
        return np.repeat(state[None, :], HOLD_ROWS, axis=0)


def observation() -> Any:
    from types import SimpleNamespace

    from robofollow_ros.policy.observation import CAMERAS, Observation

    generator = np.random.default_rng(0)
    images = {camera: generator.integers(0, 256, CAMERA_SHAPE, dtype=np.uint8) for camera in CAMERAS}
    return Observation.from_environment(SimpleNamespace(images=images, state=np.linspace(-1, 1, 14)))


def percentile(values: list[float], share: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, share))


def main() -> None:
    from robofollow_ros.evaluation.guard import GuardedPolicy
    from robofollow_ros.policy.factory import resolve_policy

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--queries', type=int, default=2000)
    parser.add_argument('--starts', type=int, default=5)
    args = parser.parse_args()
    name = 'bench_isolation:ImageHold'
    seen = observation()

    starts: dict[str, list[float]] = {'in-process': [], 'process': []}
    for _ in range(args.starts):
        for label, trusted in (('in-process', True), ('process', False)):
            started = time.perf_counter()
            policy = GuardedPolicy(resolve_policy(name, trusted=trusted), timeout=30.0)
            starts[label].append(time.perf_counter() - started)
            policy.close()

    policies = {
        'in-process': GuardedPolicy(resolve_policy(name, trusted=True), timeout=30.0),
        'process': GuardedPolicy(resolve_policy(name, trusted=False), timeout=30.0),
    }
    assert policies['process'].pid is not None and policies['in-process'].pid is None
    times: dict[str, list[float]] = {label: [] for label in policies}
    try:
        for policy in policies.values():
            policy.reset()
            for _ in range(50):  # warm-up: first mappings, allocator, caches
                policy.predict(seen, max_rows=50)
        for _ in range(args.queries):
            for label, policy in policies.items():
                started = time.perf_counter()
                policy.predict(seen, max_rows=50)
                times[label].append(time.perf_counter() - started)
    finally:
        for policy in policies.values():
            policy.close()

    print(
        f'{args.queries} queries each, 3 cameras {CAMERA_SHAPE[1]}x{CAMERA_SHAPE[0]}x3 uint8 + 14-D state, interleaved'
    )
    print(f'{"":12s}{"p50 ms":>10s}{"p95 ms":>10s}{"p99 ms":>10s}')
    for label, values in times.items():
        print(f'{label:12s}{percentile(values, 50):10.3f}{percentile(values, 95):10.3f}{percentile(values, 99):10.3f}')
    added = {share: percentile(times['process'], share) - percentile(times['in-process'], share) for share in (50, 95)}
    verdict = 'meets' if added[95] <= 2.0 else 'MISSES'
    print(f'{"added":12s}{added[50]:10.3f}{added[95]:10.3f}   ({verdict} the 2 ms p95 target)')
    print(
        f'start     in-process {np.median(starts["in-process"]) * 1000:8.1f} ms   '
        f'process {np.median(starts["process"]) * 1000:8.1f} ms   (median of {args.starts}; interpreter + build)'
    )


if __name__ == '__main__':
    main()
