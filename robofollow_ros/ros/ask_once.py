"""Ask the graph one thing from a process of its own, for the command line, which never imports rclpy:
``robofollow calibrate --camera-info-topic`` reads one CameraInfo, ``robofollow operator`` calls one Trigger service.

``python -m robofollow_ros.ros.ask_once camera_info /cam_high/camera_info --timeout 10`` prints the first
CameraInfo heard as a camera_info_manager YAML document; the subscription is best effort, so it hears reliable and
best-effort publishers alike.

``python -m robofollow_ros.ros.ask_once trigger /robofollow/stop --timeout 5`` waits for the service, calls it and
prints its message.

Exit codes: 0 on an answer (a Trigger's success), 1 when a Trigger answers failure, 2 when nothing answered in time
(said in one line on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import yaml

EXIT_REFUSED = 1
EXIT_NO_ANSWER = 2


@contextlib.contextmanager
def one_shot_node(name: str) -> Iterator[tuple[Any, Any]]:
    """A node of its own context with a single-threaded executor; shut down on leaving."""
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    context = Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node(name, context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        try:
            yield node, executor
        finally:
            executor.shutdown()
            node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def read_camera_info(topic: str, *, timeout_s: float) -> Any | None:
    """The first CameraInfo on ``topic`` within ``timeout_s`` seconds, or None."""
    from rclpy.task import Future
    from sensor_msgs.msg import CameraInfo

    from robofollow_ros.ros import qos

    with one_shot_node('robofollow_calibrate_camera_info') as (node, executor):
        heard: Future = Future()

        def take(message: CameraInfo) -> None:
            if not heard.done():
                heard.set_result(message)

        node.create_subscription(CameraInfo, topic, take, qos.SENSOR)
        executor.spin_until_future_complete(heard, timeout_sec=timeout_s)
        return heard.result() if heard.done() else None


def call_trigger(service: str, *, timeout_s: float) -> tuple[bool, str] | None:
    """(success, message) of one call of the std_srvs/Trigger ``service``, or None when it did not answer in time."""
    from std_srvs.srv import Trigger

    with one_shot_node('robofollow_operator') as (node, executor):
        client: Any = node.create_client(Trigger, service)
        if not client.wait_for_service(timeout_sec=timeout_s):
            return None
        future = client.call_async(Trigger.Request())
        executor.spin_until_future_complete(future, timeout_sec=timeout_s)
        answer: Any = future.result() if future.done() else None
        if answer is None:
            return None
        return bool(answer.success), str(answer.message)


def _print_camera_info(message: Any) -> int:
    from robofollow_ros.ros.messages import camera_info_document

    sys.stdout.write(yaml.safe_dump(camera_info_document(message), sort_keys=False))
    return 0


def _print_trigger_answer(answer: tuple[bool, str]) -> int:
    success, message = answer
    print(message or ('done' if success else 'refused'), file=sys.stdout if success else sys.stderr)
    return 0 if success else EXIT_REFUSED


class Question(NamedTuple):
    """One kind of question: its target's help text, the default wait, how to ask, how to print the answer (returns
    the exit code) and what to say when nothing answered (formatted with ``target`` and ``timeout``)."""

    target_help: str
    timeout: float
    ask: Callable[..., Any]
    answer: Callable[[Any], int]
    silence: str


QUESTIONS = {
    'camera_info': Question(
        'the CameraInfo topic, e.g. /cam_high/camera_info',
        10.0,
        read_camera_info,
        _print_camera_info,
        'no CameraInfo on {target} within {timeout:g} s',
    ),
    'trigger': Question(
        'the std_srvs/Trigger service, e.g. /robofollow/stop',
        5.0,
        call_trigger,
        _print_trigger_answer,
        'no {target} service answered within {timeout:g} s',
    ),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Ask, print the answer; the exit code says how it went (module docstring)."""
    parser = argparse.ArgumentParser(prog='ask_once', description=__doc__)
    questions = parser.add_subparsers(dest='question', required=True)
    for name, question in QUESTIONS.items():
        sub = questions.add_parser(name)
        sub.add_argument('target', help=question.target_help)
        sub.add_argument(
            '--timeout', type=float, default=question.timeout, help=f'seconds to wait (default {question.timeout:g})'
        )
    args = parser.parse_args(argv)
    question = QUESTIONS[args.question]
    result = question.ask(args.target, timeout_s=args.timeout)
    if result is None:
        print(question.silence.format(target=args.target, timeout=args.timeout), file=sys.stderr)
        return EXIT_NO_ANSWER
    return question.answer(result)


if __name__ == '__main__':
    sys.exit(main())
