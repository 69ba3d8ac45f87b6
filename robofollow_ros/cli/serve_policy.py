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
  robofollow serve-policy --policy my_pkg.policies:make --batch 8    # eval --workers 8 --policy openpi against it

--batch N answers the queries of concurrent episodes (eval --workers, Ray, several graphs) in one call of the
policy's predict_batch(observations, instructions) for up to N of them, gathered for --batch-window-ms after the
first; such a policy must be stateless between queries (every connection is one episode with its own instruction).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``robofollow serve-policy``."""
    from robofollow_ros.policy.server.run import PROTOCOLS

    parser.add_argument('--policy', required=True, help='a built-in policy name or module:function')
    parser.add_argument('--policy-kwargs', default=None, help='JSON object of keyword arguments for the policy')
    parser.add_argument('--protocol', choices=PROTOCOLS, default='openpi', help='wire protocol (default openpi)')
    parser.add_argument('--host', default='127.0.0.1', help='address to bind (default 127.0.0.1)')
    parser.add_argument('--port', type=int, default=None, help='port (default 8000 openpi, 8999 robotwin-tcp)')
    parser.add_argument(
        '--max-frame-mb',
        type=float,
        default=None,
        help='largest request accepted, in MiB; a larger one is refused before it is read (default 16: three '
        '320x240 images are ~0.9 MB over robotwin-tcp, ~0.45 MB over openpi at 224x224; three 1280x720 fit)',
    )
    parser.add_argument(
        '--max-inflight-mb',
        type=float,
        default=None,
        help='MiB of all requests being received or answered at once; a request that does not fit waits, unread, '
        'for up to --idle-timeout (default 64)',
    )
    parser.add_argument(
        '--max-connections',
        type=int,
        default=None,
        help='clients connected at once; when all are taken, the one idle longest is closed for a new client (one '
        'in the middle of a request never is), and with none idle new clients wait to be accepted (default 64)',
    )
    parser.add_argument(
        '--batch',
        type=int,
        default=1,
        help="queries answered in one call of the policy's predict_batch, at most (default 1: one at a time)",
    )
    parser.add_argument(
        '--batch-window-ms',
        type=float,
        default=5.0,
        help='how long a batch waits after its first query for more, in ms (default 5)',
    )
    parser.add_argument(
        '--idle-timeout',
        type=float,
        default=None,
        help='seconds a connection may send nothing (also mid-request) before it is closed (default 300)',
    )


def _bytes(mib: float | None) -> int | None:
    return None if mib is None else int(mib * 1024 * 1024)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    from robofollow_ros.errors import RoboFollowError
    from robofollow_ros.policy.factory import parse_policy_kwargs
    from robofollow_ros.policy.server.run import serve_policy

    if args.port is not None and not 0 <= args.port <= 65535:
        raise RoboFollowError(f'--port must be in 0-65535, got {args.port}')
    for option, value in (('--max-frame-mb', args.max_frame_mb), ('--max-inflight-mb', args.max_inflight_mb)):
        if value is not None and not 0 < value < 2**40:
            raise RoboFollowError(f'{option} must be a positive number of MiB')
    if None not in (args.max_frame_mb, args.max_inflight_mb) and args.max_inflight_mb < args.max_frame_mb:
        raise RoboFollowError('--max-inflight-mb must be at least --max-frame-mb: one request must fit')
    if args.max_connections is not None and args.max_connections < 1:
        raise RoboFollowError('--max-connections must be at least 1')
    if args.idle_timeout is not None and not args.idle_timeout > 0:
        raise RoboFollowError('--idle-timeout must be positive')
    if args.batch < 1:
        raise RoboFollowError('--batch must be at least 1')
    if not 0.0 <= args.batch_window_ms <= 10_000.0:
        raise RoboFollowError('--batch-window-ms must lie between 0 and 10000')
    serve_policy(
        args.policy,
        kwargs=parse_policy_kwargs(args.policy_kwargs),
        protocol=args.protocol,
        host=args.host,
        port=args.port,
        max_frame_bytes=_bytes(args.max_frame_mb),
        idle_timeout=args.idle_timeout,
        max_connections=args.max_connections,
        max_inflight_bytes=_bytes(args.max_inflight_mb),
        batch=args.batch,
        batch_window=args.batch_window_ms / 1000.0,
        announce=lambda line: print(line, flush=True),
    )
    return 0
