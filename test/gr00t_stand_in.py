"""A stand-in GR00T N1.6 policy server, written from the documented wire (``policy/gr00t_transport.py``): a ZeroMQ
REP socket on a thread answering ``ping``, ``reset``, ``get_modality_config`` and ``get_action`` (batched), with
``{'error': ...}`` for a failure, as the real server does. Its actions are a known function of what it was sent, so a
test can tell that every key arrived where it belongs: each action group is the matching state group plus 0.01 per
step, plus 0.001 times the episode's index in the batch."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import zmq

from robofollow_ros.policy.gr00t_codec import MODALITY_TAG, packb, unpackb

HORIZON = 16
GROUPS = {'left_arm': 6, 'left_gripper': 1, 'right_arm': 6, 'right_gripper': 1}


@dataclass
class StandIn:
    """The server's state: what it was asked (``requests``) and how to misbehave (``delay`` before answering,
    ``token`` it wants)."""

    port: int
    requests: list[dict[str, Any]] = field(default_factory=list)
    delay: float = 0.0
    token: str | None = None
    video_keys: tuple[str, ...] = ('cam_high', 'cam_left_wrist', 'cam_right_wrist')
    stop: threading.Event = field(default_factory=threading.Event)

    def modality_config(self) -> dict[str, Any]:
        def config(keys: list[str]) -> dict[str, Any]:
            return {MODALITY_TAG: True, 'as_json': {'delta_indices': [0], 'modality_keys': keys}}

        return {
            'video': config(list(self.video_keys)),
            'state': config(list(GROUPS)),
            'action': config(list(GROUPS)),
            'language': config(['task']),
        }

    def answer(self, request: dict[str, Any]) -> Any:
        if self.token is not None and request.get('api_token') != self.token:
            return {'error': 'Unauthorized: Invalid API token'}
        endpoint = request.get('endpoint', 'get_action')
        if endpoint == 'ping':
            return {'status': 'ok', 'message': 'Server is running'}
        if endpoint == 'reset':
            return {}
        if endpoint == 'get_modality_config':
            return self.modality_config()
        if endpoint != 'get_action':
            return {'error': f'Unknown endpoint: {endpoint}'}
        observation = request['data']['observation']
        states = observation['state']
        batch = len(observation['language']['task'])
        steps = 0.01 * np.arange(1, HORIZON + 1)[None, :, None]
        index = 0.001 * np.arange(batch)[:, None, None]
        action = {key: states[key][:, -1:, :] + steps + index for key in GROUPS}
        return [action, {}]


def serve(stand_in: StandIn) -> None:
    context = zmq.Context()
    socket = context.socket(zmq.REP)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.RCVTIMEO, 50)
    socket.bind(f'tcp://127.0.0.1:{stand_in.port}')
    try:
        while not stand_in.stop.is_set():
            try:
                frame = socket.recv()
            except zmq.Again:
                continue
            request = unpackb(frame)
            stand_in.requests.append(request)
            if stand_in.delay:
                time.sleep(stand_in.delay)
            socket.send(packb(stand_in.answer(request)))
    finally:
        socket.close()
        context.term()


def start(port: int, **settings: Any) -> tuple[StandIn, threading.Thread]:
    stand_in = StandIn(port, **settings)
    thread = threading.Thread(target=serve, args=(stand_in,), daemon=True)
    thread.start()
    return stand_in, thread
