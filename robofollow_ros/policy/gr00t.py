"""``gr00t``: a policy served by NVIDIA's GR00T N1.6 policy server (``run_gr00t_server.py``: ZeroMQ, msgpack).

On construction it pings the server (a wrong address fails at once) and reads the checkpoint's modality
configuration, refusing in one line a key this cell would send or read that the checkpoint does not have
(``gr00t_messages.Gr00tKeys``). ``reset`` calls the server's ``reset``; each ``predict`` sends the current frame of
the three cameras, the state groups and the instruction, and returns the action groups as one [horizon, 14] chunk.
``predict_batch`` sends several episodes' observations as one batch (B > 1), as the server takes them.

    robofollow eval --policy gr00t --policy-kwargs '{"host": "gpu-box", "port": 5555}'
    robofollow eval --policy gr00t --policy-kwargs '{"state": {"arms": [0, 14]}, "action": {"arms": [0, 14]}}'
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.gr00t_messages import Gr00tKeys, chunks_from_reply, observation_request
from robofollow_ros.policy.gr00t_transport import DEFAULT_MAX_FRAME_BYTES, Gr00tConnection

DEFAULT_PORT = 5555
API_TOKEN_VARIABLE = 'GR00T_API_TOKEN'


class Gr00tPolicy:
    """Client of a GR00T N1.6 policy server.

    Args:
        host: server host, or a full ``tcp://`` address.
        port: server port (GR00T's default 5555).
        timeout: seconds to wait for each reply.
        api_token: the server's token, when it wants one; default: the ``GR00T_API_TOKEN`` environment variable,
            which keeps it out of the run's recorded policy arguments.
        video, state, action, language: the key mapping (``Gr00tKeys.from_options``).
        check_keys: compare the mapping with the server's modality configuration on construction.
        max_frame_bytes: largest reply accepted.

    Raises:
        PolicyError: the server did not answer ``ping``, or the mapping does not fit the checkpoint.
    """

    def __init__(
        self,
        host: str = '127.0.0.1',
        port: int | None = DEFAULT_PORT,
        *,
        timeout: float = 30.0,
        api_token: str | None = None,
        video: Mapping[str, str] | None = None,
        state: Mapping[str, Sequence[int]] | None = None,
        action: Mapping[str, Sequence[int]] | None = None,
        language: str = 'task',
        check_keys: bool = True,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        address = host if host.startswith('tcp://') else f'tcp://{host}:{int(port or DEFAULT_PORT)}'
        self.keys = Gr00tKeys.from_options(video=video, state=state, action=action, language=language)
        self._instruction = ''
        self._connection = Gr00tConnection(
            address,
            timeout=timeout,
            api_token=api_token if api_token is not None else os.environ.get(API_TOKEN_VARIABLE) or None,
            max_frame_bytes=max_frame_bytes,
        )
        try:
            self._connection.call('ping', requires_input=False)
            if check_keys:
                self.keys.check_against(self._connection.call('get_modality_config', requires_input=False))
        except PolicyError:
            self._connection.shutdown()
            raise

    def reset(self) -> None:
        """Start a new episode on the server."""
        self._connection.call('reset', {'options': None})

    def set_instruction(self, text: str) -> None:
        """Sent as the language input with every observation."""
        self._instruction = text

    def predict(self, observation: Any) -> np.ndarray:
        """The server's [horizon, 14] float32 action chunk for ``observation``."""
        return self.predict_batch([observation], [self._instruction])[0]

    def predict_batch(self, observations: Sequence[Any], instructions: Sequence[str]) -> list[np.ndarray]:
        """One ``get_action`` for several episodes' observations (B = their number); a chunk for each."""
        if len(observations) != len(instructions) or not observations:
            raise PolicyError('a GR00T batch needs one instruction per observation, and at least one')
        data = observation_request(observations, instructions, self.keys)
        return chunks_from_reply(self._connection.call('get_action', data), self.keys, batch=len(observations))

    def close(self) -> None:
        """Close the connection."""
        self._connection.shutdown()
