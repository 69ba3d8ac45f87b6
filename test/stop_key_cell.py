"""The evaluator's real-cell part (``realcell.operator.CellOperator``) at a terminal, for ``test_operator_stop.py``.

``python -m stop_key_cell OUT`` (stdin, stdout and stderr: the slave of a pty; started in a session of its own) makes
the pty its controlling terminal, so that it is a terminal of this process's foreground group as a shell gives the
evaluator one, builds a ``CellOperator`` on a node spun by an events executor (as the evaluator's), prints ``READY``
once its client has found a ``/robofollow/stop`` service, and runs until SIGTERM, after which it gives the terminal back
(``CellOperator.close``) and prints ``CLOSED``.
"""

from __future__ import annotations

import fcntl
import signal
import sys
import termios
import threading
import time
from pathlib import Path


def main() -> int:
    fcntl.ioctl(sys.stdin.fileno(), termios.TIOCSCTTY, 0)

    import rclpy
    from rclpy.experimental import EventsExecutor

    from robofollow_ros.realcell.operator import CellOperator, CellSettings, LayoutGate
    from robofollow_ros.ros.runtime import spin

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    rclpy.init()
    node = rclpy.create_node('evaluator')
    executor = EventsExecutor()
    executor.add_node(node)
    threading.Thread(target=spin, args=(executor,), daemon=True).start()
    settings = CellSettings(
        robot_profile='aloha_ros2_control', pose_source='sim', fake_hardware=False, layout=LayoutGate(enabled=False)
    )

    def say(text: str) -> None:
        print(text, flush=True)

    cell = CellOperator(
        node,
        settings=settings,
        out=Path(sys.argv[1]),
        condition=threading.Condition(),
        wait=lambda *_args, **_kwargs: None,
        terminal=sys.stdin,
        say=say,
    )
    try:
        while not cell.stop_client.service_is_ready():
            time.sleep(0.01)
        say('READY')
        while not stop.wait(0.1):
            pass
    finally:
        cell.close()
        say('CLOSED')
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
