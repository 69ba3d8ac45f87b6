"""Cost per query of a user policy in its sandbox, in a plain process of its own (the isolation before the sandbox)
and in-process (``--trusted-policy``).

All three call the same ``hold``-like user policy (``bench_isolation:ImageHold``: it looks at the three cameras and
holds the state) through ``GuardedPolicy`` with three 320x240x3 uint8 images and the 14-D state, in this process and
run, queries interleaved so that load from other processes hits all alike. Prints p50, p95 and p99 per query of
each, what the sandbox and the plain process add to in-process (target: at most 2 ms at p95) and what the sandbox
adds to the plain process; then the time to start each (bwrap's namespaces and mounts, a fresh interpreter, build).

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
    from robofollow_ros.policy.factory import PolicyFactory, resolve_policy

    def build(label: str) -> GuardedPolicy:
        if label == 'process':
            plain = PolicyFactory(name=name, privileged=False, factory=None, isolation='process')
            return GuardedPolicy(plain, timeout=30.0)
        return GuardedPolicy(resolve_policy(name, trusted=label == 'in-process'), timeout=30.0)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--queries', type=int, default=2000)
    parser.add_argument('--starts', type=int, default=5)
    args = parser.parse_args()
    name = 'bench_isolation:ImageHold'
    seen = observation()

    labels = ('in-process', 'process', 'sandbox')
    starts: dict[str, list[float]] = {label: [] for label in labels}
    for _ in range(args.starts):
        for label in labels:
            started = time.perf_counter()
            policy = build(label)
            starts[label].append(time.perf_counter() - started)
            policy.close()

    policies = {label: build(label) for label in labels}
    assert policies['sandbox'].isolation == 'sandbox' and policies['process'].isolation == 'process'
    assert policies['in-process'].pid is None
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
    for label, base in (('sandbox', 'in-process'), ('process', 'in-process'), ('sandbox', 'process')):
        added = {share: percentile(times[label], share) - percentile(times[base], share) for share in (50, 95)}
        verdict = f'  ({"meets" if added[95] <= 2.0 else "MISSES"} the 2 ms p95 target)' if base == 'in-process' else ''
        print(f'{label + " - " + base:22s}{added[50]:10.3f}{added[95]:10.3f}{verdict}')
    medians = '   '.join(f'{label} {np.median(starts[label]) * 1000:7.1f} ms' for label in labels)
    print(f'start (median of {args.starts}; sandbox, interpreter, build): {medians}')


if __name__ == '__main__':
    main()
