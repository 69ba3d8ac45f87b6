"""Fault hooks for ``bench/bench_faults.py`` (on ``PYTHONPATH`` only where that bench puts this folder).

With ``ROBOFOLLOW_FAULTS`` naming a folder, the processes of a real-mode graph watch it for trigger files:

* fake hardware: ``joint_states_off``, ``cameras_off`` and ``poses_off`` silence the driver's joint states, the
  cameras and the object poses while they exist (the measured joints keep going out on ``SIDE_TOPIC`` for the
  bench, which must see the arm whatever the graph sees), and each cell reset is announced on ``RESET_TOPIC``;
* the policy bridge: ``worker_exception`` makes the episode thread raise ``RuntimeError`` partway through the next
  chunk (a bug of ours), once.

Each trigger, when it takes effect, writes ``<name>.fired`` holding the wall clock (ns). Nothing else is changed: the
hooks wrap the nodes' own objects after their modules are imported.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import random
import sys
import threading
import time
from pathlib import Path

CONTROL = Path(os.environ['ROBOFOLLOW_FAULTS']) if os.environ.get('ROBOFOLLOW_FAULTS') else None
SIDE_TOPIC = '/bench_faults/joint_states'
RESET_TOPIC = '/bench_faults/cell_reset'
"""Fake hardware's resets put the arms at home at once: the bench cuts its measures there."""
FLAGS = ('joint_states_off', 'cameras_off', 'poses_off')


def fired(name: str) -> None:
    assert CONTROL is not None
    (CONTROL / f'{name}.fired').write_text(str(time.time_ns()))


class _Switches:
    """The fake hardware's flags, polled from the control folder every 5 ms."""

    def __init__(self) -> None:
        self.on = dict.fromkeys(FLAGS, False)
        threading.Thread(target=self.poll, name='fault-switches', daemon=True).start()

    def poll(self) -> None:
        assert CONTROL is not None
        while True:
            for name in FLAGS:
                now = (CONTROL / name).exists()
                if now and not self.on[name]:
                    fired(name)
                self.on[name] = now
            time.sleep(0.005)


class _Gated:
    """A publisher that drops what it is given while ``switches.on[flag]``; everything else passes through."""

    def __init__(self, publisher, switches: _Switches, flag: str, side=None, topic: str = '') -> None:
        self._publisher, self._switches, self._flag, self._side = publisher, switches, flag, side
        self._topic = topic

    def publish(self, message) -> None:
        if self._side is not None:
            # The side copy names the driver topic it came from: per-arm drivers (xs_sdk, piper_ros) give both arms
            # the same joint names, so the names alone cannot tell the arms apart.
            copy = type(message)(
                header=type(message.header)(stamp=message.header.stamp, frame_id=self._topic),
                name=message.name,
                position=message.position,
                velocity=message.velocity,
                effort=message.effort,
            )
            self._side.publish(copy)
        if not self._switches.on[self._flag]:
            self._publisher.publish(message)

    def __getattr__(self, name: str):
        return getattr(self._publisher, name)


def _gate_fake_hardware(node) -> None:
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Int64

    from robofollow_ros.realcell.fake_driver import DRIVER_STATE

    switches = _Switches()
    side = node.create_publisher(JointState, SIDE_TOPIC, DRIVER_STATE)
    resets = node.create_publisher(Int64, RESET_TOPIC, DRIVER_STATE)
    reset = node.cell.reset

    def announced_reset(*args, **kwargs):
        done = reset(*args, **kwargs)
        resets.publish(Int64(data=time.time_ns()))
        return done

    node.cell.reset = announced_reset
    node.joint_pubs = {t: _Gated(p, switches, 'joint_states_off', side, t) for t, p in node.joint_pubs.items()}
    for group in ('image_pubs', 'info_pubs'):
        setattr(node, group, {c: _Gated(p, switches, 'cameras_off') for c, p in getattr(node, group).items()})
    for group in ('object_pubs', 'truth_pubs'):
        setattr(node, group, {n: _Gated(p, switches, 'poses_off') for n, p in getattr(node, group).items()})


def _patch_runtime(module) -> None:
    """Nodes run as ``python -m robofollow_ros.nodes.<name>`` (their module is ``__main__``, never imported by
    name): the fake hardware node is gated as ``run_node`` builds it."""
    original = module.run_node

    def run_node(factory, args=None):
        if getattr(factory, '__name__', '') != 'FakeHardwareNode':
            return original(factory, args)

        def gated():
            node = factory()
            _gate_fake_hardware(node)
            return node

        return original(gated, args)

    module.run_node = run_node


def _patch_safe_motion(module) -> None:
    original = module.SafeMotion.wait_executed

    def wait_executed(self, decision, *, sent_at: float) -> bool:
        assert CONTROL is not None
        trigger = CONTROL / 'worker_exception'
        if trigger.exists() and decision.command is not None:
            trigger.unlink()
            time.sleep(random.uniform(0.1, 0.8) * float(decision.command.times[-1]))
            fired('worker_exception')
            raise RuntimeError('injected fault: the episode thread raised')
        return original(self, decision, sent_at=sent_at)

    module.SafeMotion.wait_executed = wait_executed


PATCHES = {
    'robofollow_ros.ros.runtime': _patch_runtime,
    'robofollow_ros.realcell.safe_motion': _patch_safe_motion,
}


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name not in PATCHES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader, patch = spec.loader, PATCHES[name]
        execute = loader.exec_module

        def exec_module(module) -> None:
            execute(module)
            patch(module)

        loader.exec_module = exec_module
        return spec


if CONTROL is not None:
    sys.meta_path.insert(0, _PatchAfterImport())
