"""The policy process: ``python -m robofollow_ros.policy.isolation.host`` builds one user policy and answers calls.

It is started by ``client.PolicyProcess`` as a fresh interpreter, inside the policy sandbox, and imports only
the policy interface, the wire codec and what the user's policy imports itself: no simulator, no evaluator, no
task. Its address space is capped (``RLIMIT_AS``) before anything is imported, it ignores Ctrl-C (the evaluator
decides when it stops) and it exits when its parent is gone.

Requests are ``{'op': ...}`` maps: ``build`` (name, keyword arguments, the evaluator's ``sys.path``),
``reset``, ``set_instruction`` (text), ``predict`` (state, images) and ``close``. Each gets one reply:
``{'ok': value}``, ``{'invalid': message}`` for a chunk that is not a valid action chunk, or ``{'error': ...}``
with the exception's type and message only (no traceback: nothing of this process's files is reported).
"""

from __future__ import annotations

import argparse
import errno
import os
import resource
import signal
import sys
import threading
import time
from typing import Any

MIB = 1024 * 1024
PARENT_POLL_SECONDS = 0.5
MAX_MESSAGE_CHARS = 2000


def limit_memory(mebibytes: int) -> None:
    """Cap this process's address space at ``mebibytes`` MiB (0: no cap); the processes it forks inherit the cap.

    ``RLIMIT_AS`` counts every mapping, shared memory and files mapped included (``RLIMIT_DATA`` let a policy
    map 1 GiB of shared memory under a 300 MiB cap). It also counts address space reserved and never touched
    (thread stacks, allocator arenas; CUDA reserves far more), which is why the default cap is generous. Soft and
    hard limit alike, so the policy cannot raise it again.
    """
    if mebibytes <= 0:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = mebibytes * MIB if hard == resource.RLIM_INFINITY else min(hard, mebibytes * MIB)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is the memory cap speaking (``MemoryError``, or ``ENOMEM`` from ``mmap`` and friends)."""
    return isinstance(error, MemoryError) or (isinstance(error, OSError) and error.errno == errno.ENOMEM)


def watch_parent(parent: int) -> None:
    """Exit as soon as the parent process is gone (even while the policy is busy in ``predict``); ``parent`` 0
    means the parent this process has now (in the sandbox, the namespace's init)."""
    parent = parent or os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name='parent-watch', daemon=True).start()


def describe(error: BaseException) -> dict[str, Any]:
    """The reply for an exception: its type name and message, nothing else."""
    from robofollow_ros.errors import PolicyError

    return {
        'error': {
            'type': type(error).__name__,
            'message': str(error)[:MAX_MESSAGE_CHARS],
            'own': isinstance(error, PolicyError),
            'fatal': not isinstance(error, Exception),
            'memory': out_of_memory(error),
        }
    }


class Host:
    """The policy and the request handlers."""

    def __init__(self, images_fd: int) -> None:
        from robofollow_ros.policy.isolation.shared_images import ImageReader

        self.images = ImageReader(images_fd) if images_fd >= 0 else None
        self.policy: Any = None

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run one request; its reply."""
        from robofollow_ros.errors import PolicyError
        from robofollow_ros.policy.base import needs_images, validate_chunk

        op = request.get('op')
        if op == 'build':
            from robofollow_ros.policy.factory import resolve_policy

            sys.path[:] = [str(entry) for entry in request.get('path') or sys.path]
            factory = resolve_policy(str(request['name']), kwargs=dict(request.get('kwargs') or {}), trusted=True)
            self.policy = factory.build()
            return {'ok': {'needs_images': needs_images(self.policy), 'pid': os.getpid()}}
        if self.policy is None:
            raise PolicyError(f'{op} before the policy was built')
        if op == 'reset':
            self.policy.reset()
            return {'ok': None}
        if op == 'set_instruction':
            self.policy.set_instruction(str(request['text']))
            return {'ok': None}
        if op == 'predict':
            chunk = self.policy.predict(self.observation(request))
            try:
                return {'ok': validate_chunk(chunk)}
            except PolicyError as error:
                return {'invalid': str(error)[:MAX_MESSAGE_CHARS]}
        if op == 'close':
            close = getattr(self.policy, 'close', None)
            if callable(close):
                close()
            return {'ok': None}
        raise PolicyError(f'unknown request {op!r}')

    def observation(self, request: dict[str, Any]) -> Any:
        """The ``Observation`` of a predict request (read-only copies of the images and the state)."""
        from robofollow_ros.policy.wire import wire_observation

        if 'inline_images' in request:
            images = dict(request['inline_images'])
        elif self.images is not None:
            images = self.images.read(request.get('images') or [], size=int(request.get('area', 0)))
        else:
            images = {}
        return wire_observation(images, request['state'])


def serve(requests_fd: int, replies_fd: int, images_fd: int) -> int:
    """Answer requests until ``close`` or until the evaluator closes the pipe."""
    from robofollow_ros.policy.isolation.transport import Channel

    channel = Channel(requests_fd, replies_fd)
    host = Host(images_fd)
    while True:
        try:
            request = channel.receive()
        except EOFError:
            return 0
        try:
            reply = host.handle(request)
        except BaseException as error:  # whatever the policy raises (SystemExit too) is its answer
            reply = describe(error)
        try:
            channel.send(reply)
        except EOFError:
            return 0
        except Exception as error:  # a reply that cannot be encoded is the policy's failure, not the host's
            channel.send(describe(error))
        if request.get('op') == 'close':
            return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the policy process."""
    parser = argparse.ArgumentParser(prog='robofollow_ros.policy.isolation.host')
    parser.add_argument('--requests', type=int, required=True)
    parser.add_argument('--replies', type=int, required=True)
    parser.add_argument('--images', type=int, default=-1)
    parser.add_argument('--parent', type=int, required=True)
    parser.add_argument('--memory-limit-mib', type=int, default=0)
    parser.add_argument('--relay', default='', help='PORT:SOCKET: serve 127.0.0.1:PORT through the relay socket')
    args = parser.parse_args(argv)
    limit_memory(args.memory_limit_mib)
    if args.relay:
        from robofollow_ros.policy.isolation.network import start_inner_relay

        port, _, socket_path = args.relay.partition(':')
        start_inner_relay(int(port), socket_path)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent(args.parent)
    return serve(args.requests, args.replies, args.images)


if __name__ == '__main__':
    raise SystemExit(main())
