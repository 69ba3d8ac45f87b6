"""Ask the graph one thing from a process of its own, for the command line, which never imports rclpy:
``robofollow calibrate --camera-info-topic`` reads one CameraInfo, ``robofollow calibrate --from-topic`` saves a few
images of the board, ``robofollow operator`` calls one Trigger service (or the bridge's ``MoveHome``).

``python -m robofollow_ros.ros.ask_once camera_info /cam_high/camera_info --timeout 10`` prints the first
CameraInfo heard as a camera_info_manager YAML document; the subscription is best effort, so it hears reliable and
best-effort publishers alike.

``python -m robofollow_ros.ros.ask_once images /cam_high/image_raw --count 3 --every 1 --folder DIR`` saves the
first image heard and then one at least ``--every`` seconds after the one before, until ``--count``, as PNG files
in DIR (``board_<i>.png``), and prints their paths; best effort as well.

``python -m robofollow_ros.ros.ask_once trigger /robofollow/stop --timeout 5`` waits for the service, calls it and
prints its message (stdout; stderr for a refusal), then on stderr how long after the start it answered and the
service was found. ``--started T`` (``time.monotonic()`` of the command that started this process) counts the
timeout and the times printed from T; ``--recall S`` calls again every S seconds until an answer comes (for the
idempotent stop: an answer Fast DDS drops, because the service had not yet matched this process's reader, must not
make a stop that went through look unanswered). ``home /robofollow/home`` does the same for the bridge's
``robofollow_interfaces/srv/MoveHome`` (success: the whole move was sent).

It imports rclpy and the message it needs, nothing of the package's heavy modules (an emergency stop starts it), and
looks for the service every ``POLL_SECONDS`` (rclpy's ``wait_for_service`` sleeps 0.25 s between looks).

Exit codes: 0 on an answer (a Trigger's success, a home move sent), 1 when the service answers failure, 2 when
nothing answered in time (said in one line on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from robofollow_ros.errors import GraphError, RoboFollowError

EXIT_REFUSED = 1
EXIT_NO_ANSWER = 2
POLL_SECONDS = 0.005
"""How often the service is looked for (a look is one call into rmw's graph cache)."""
ANSWER_GRACE_SECONDS = 0.5
"""How long an answer is waited for when the service was found only as the timeout ran out (a loaded machine took
that long to start): a stop sent is given the chance to say so."""


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


class TriggerAnswer(NamedTuple):
    """A std_srvs/Trigger's answer, how many seconds after the start it came and the service was found (DDS
    discovery of the graph), and how many calls it took."""

    success: bool
    message: str
    seconds: float
    found: float
    calls: int = 1


def read_camera_info(topic: str, *, timeout_s: float, started: float | None = None) -> Any | None:
    """The first CameraInfo on ``topic`` within ``timeout_s`` seconds (from ``started``, default now), or None."""
    from rclpy.task import Future
    from sensor_msgs.msg import CameraInfo

    from robofollow_ros.ros import qos

    with one_shot_node('robofollow_calibrate_camera_info') as (node, executor):
        heard: Future = Future()

        def take(message: CameraInfo) -> None:
            if not heard.done():
                heard.set_result(message)

        node.create_subscription(CameraInfo, topic, take, qos.SENSOR)
        start = time.monotonic() if started is None else started
        executor.spin_until_future_complete(heard, timeout_sec=max(0.0, start + timeout_s - time.monotonic()))
        return heard.result() if heard.done() else None


def save_images(
    topic: str, *, timeout_s: float, started: float | None = None, count: int, every_s: float, folder: str
) -> list[Path] | None:
    """``count`` images of ``topic``, ``every_s`` seconds apart at least, saved as PNG files in ``folder``; None
    when fewer came within ``timeout_s`` seconds of ``started`` (default now)."""
    import cv2
    from sensor_msgs.msg import Image

    from robofollow_ros.ros import qos
    from robofollow_ros.ros.messages import image_array

    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    saved: list[Path] = []
    refused: list[GraphError] = []
    last = -math.inf
    with one_shot_node('robofollow_calibrate_images') as (node, executor):

        def take(message: Image) -> None:
            nonlocal last
            now = time.monotonic()
            if len(saved) >= count or now - last < every_s:
                return
            path = target / f'board_{len(saved)}.png'
            try:
                pixels = image_array(message)
            except GraphError as error:
                refused.append(GraphError(f'{topic}: {error}'))
                return
            if not cv2.imwrite(str(path), cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)):
                refused.append(GraphError(f'cannot write {path}'))
                return
            saved.append(path)
            last = now

        node.create_subscription(Image, topic, take, qos.SENSOR)
        deadline = (time.monotonic() if started is None else started) + timeout_s
        while len(saved) < count and not refused and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=min(0.1, max(0.0, deadline - time.monotonic())))
    if refused:
        raise refused[0]
    return saved if len(saved) == count else None


def call_trigger(
    service: str, *, timeout_s: float, started: float | None = None, recall_s: float = 0.0
) -> TriggerAnswer | None:
    """The answer of the std_srvs/Trigger ``service``, or None when it did not answer within ``timeout_s`` seconds
    of ``started`` (``time.monotonic()``, default now). The service is looked for every ``POLL_SECONDS``; with
    ``recall_s`` > 0 it is called again every ``recall_s`` seconds until one call is answered."""
    from std_srvs.srv import Trigger

    return _call(Trigger, lambda a: bool(a.success), service, timeout_s=timeout_s, started=started, recall_s=recall_s)


def call_home(service: str, *, timeout_s: float, started: float | None = None) -> TriggerAnswer | None:
    """As ``call_trigger``, for the bridge's ``/robofollow/home`` (``MoveHome``: done when the move was sent whole)."""
    from robofollow_ros.ros.protocol import HomeCode, MoveHome

    return _call(MoveHome, lambda a: a.code == HomeCode.MOVING, service, timeout_s=timeout_s, started=started)


def _call(
    kind: Any,
    done: Callable[[Any], bool],
    service: str,
    *,
    timeout_s: float,
    started: float | None,
    recall_s: float = 0.0,
) -> TriggerAnswer | None:
    """``call_trigger`` for a service of type ``kind`` with an empty request, ``done`` telling success."""
    start = time.monotonic() if started is None else started
    deadline = start + timeout_s
    with one_shot_node('robofollow_operator') as (node, executor):
        client: Any = node.create_client(kind, service)
        while not client.service_is_ready():  # looked at once at least, however late this process started
            if time.monotonic() >= deadline or not node.context.ok():
                return None
            time.sleep(POLL_SECONDS)
        found = time.monotonic() - start
        answer_by = max(deadline, time.monotonic() + ANSWER_GRACE_SECONDS)
        calls = 0
        while time.monotonic() < answer_by:
            future = client.call_async(kind.Request())
            calls += 1
            until = answer_by if recall_s <= 0.0 else min(answer_by, time.monotonic() + recall_s)
            executor.spin_until_future_complete(future, timeout_sec=max(0.0, until - time.monotonic()))
            answer: Any = future.result() if future.done() else None
            if answer is not None:
                seconds = time.monotonic() - start
                return TriggerAnswer(done(answer), str(answer.message), seconds, found, calls)
            client.remove_pending_request(future)
        return None


def _print_camera_info(message: Any) -> int:
    import yaml

    from robofollow_ros.ros.messages import camera_info_document

    sys.stdout.write(yaml.safe_dump(camera_info_document(message), sort_keys=False))
    return 0


def _print_paths(paths: list[Path]) -> int:
    for path in paths:
        print(path)
    return 0


def _print_trigger_answer(answer: TriggerAnswer) -> int:
    """The service's message alone on stdout (stderr for a refusal), then when it answered on stderr."""
    print(
        answer.message or ('done' if answer.success else 'refused'), file=sys.stdout if answer.success else sys.stderr
    )
    calls = '' if answer.calls == 1 else f', {answer.calls} calls'
    print(
        f'answered {answer.seconds:.2f} s after the command started (service found after {answer.found:.2f} s{calls})',
        file=sys.stderr,
    )
    return 0 if answer.success else EXIT_REFUSED


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
    'images': Question(
        'the image topic, e.g. /cam_high/image_raw',
        30.0,
        save_images,
        _print_paths,
        'not enough images on {target} within {timeout:g} s (is the camera publishing?)',
    ),
    'trigger': Question(
        'the std_srvs/Trigger service, e.g. /robofollow/stop',
        5.0,
        call_trigger,
        _print_trigger_answer,
        'no {target} service answered within {timeout:g} s',
    ),
    'home': Question(
        "the policy bridge's robofollow_interfaces/MoveHome service, e.g. /robofollow/home",
        5.0,
        call_home,
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
        sub.add_argument(
            '--started', type=float, default=None, help="time.monotonic() of the command's start (default: now)"
        )
        if name == 'trigger':
            sub.add_argument(
                '--recall',
                type=float,
                default=0.0,
                help='call again every RECALL seconds until answered (default: once)',
            )
        if name == 'images':
            sub.add_argument('--count', type=int, default=3, help='images to save (default 3)')
            sub.add_argument('--every', type=float, default=1.0, help='seconds between them at least (default 1)')
            sub.add_argument('--folder', required=True, help='where to save them')
    args = parser.parse_args(argv)
    question = QUESTIONS[args.question]
    extra: dict[str, Any] = {}
    if args.question == 'trigger':
        extra = {'recall_s': args.recall}
    elif args.question == 'images':
        extra = {'count': args.count, 'every_s': args.every, 'folder': args.folder}
    try:
        result = question.ask(args.target, timeout_s=args.timeout, started=args.started, **extra)
    except RoboFollowError as error:
        print(error, file=sys.stderr)
        return EXIT_NO_ANSWER
    if result is None:
        print(question.silence.format(target=args.target, timeout=args.timeout), file=sys.stderr)
        return EXIT_NO_ANSWER
    return question.answer(result)


if __name__ == '__main__':
    sys.exit(main())
