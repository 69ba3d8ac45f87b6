"""``robofollow serve-policy``: serve a policy over the openpi or the robotwin-tcp wire."""

from __future__ import annotations

import argparse

HELP = 'serve a policy over the network (openpi websocket or robotwin-tcp JSON protocol)'
DESCRIPTION = """\
Serve a policy so that remote clients can query it: openpi clients (websocket + msgpack, ALOHA keys)
or RoboFollow remote-policy clients (length-prefixed JSON over TCP). Only images, the 14-D state and the
instruction travel over the wire, so privileged built-ins (expert, blind) cannot be served.
Binds 127.0.0.1 unless --host says otherwise; stops cleanly on Ctrl-C or SIGTERM.

examples:
  robofollow serve-policy --policy hold --port 8000
  robofollow serve-policy --policy replay --policy-kwargs '{"path": "runs/x/episodes/ep"}' --protocol robotwin-tcp
  robofollow serve-policy --policy my_pkg.policies:make --policy-kwargs '{"checkpoint": "ckpt"}' --port 8000
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``robofollow serve-policy``."""
    from robofollow_ros.policy.server.run import PROTOCOLS

    parser.add_argument('--policy', required=True, help='a built-in policy name or module:function')
    parser.add_argument('--policy-kwargs', default=None, help='JSON object of keyword arguments for the policy')
    parser.add_argument('--protocol', choices=PROTOCOLS, default='openpi', help='wire protocol (default openpi)')
    parser.add_argument('--host', default='127.0.0.1', help='address to bind (default 127.0.0.1)')
    parser.add_argument('--port', type=int, default=None, help='port (default 8000 openpi, 8999 robotwin-tcp)')
    parser.add_argument('--max-frame-mb', type=float, default=None, help='largest request accepted, in MiB')
    parser.add_argument(
        '--idle-timeout',
        type=float,
        default=None,
        help='seconds a connection may send nothing (also mid-request) before it is closed (default 300)',
    )


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    from robofollow_ros.errors import RoboFollowError
    from robofollow_ros.policy.factory import parse_policy_kwargs
    from robofollow_ros.policy.server.run import serve_policy

    if args.port is not None and not 0 <= args.port <= 65535:
        raise RoboFollowError(f'--port must be in 0-65535, got {args.port}')
    if args.max_frame_mb is not None and args.max_frame_mb <= 0:
        raise RoboFollowError('--max-frame-mb must be positive')
    if args.idle_timeout is not None and not args.idle_timeout > 0:
        raise RoboFollowError('--idle-timeout must be positive')
    serve_policy(
        args.policy,
        kwargs=parse_policy_kwargs(args.policy_kwargs),
        protocol=args.protocol,
        host=args.host,
        port=args.port,
        max_frame_bytes=None if args.max_frame_mb is None else int(args.max_frame_mb * 1024 * 1024),
        idle_timeout=args.idle_timeout,
        announce=lambda line: print(line, flush=True),
    )
    return 0
