"""``lerobot-async``: a policy served by LeRobot's async inference server (``lerobot.async_inference.policy_server``).

LeRobot's server speaks gRPC (``transport.AsyncInference``: ``Ready``, ``SendPolicyInstructions``,
``SendObservations``, ``GetActions``) with pickled LeRobot objects as payloads, so this client runs where LeRobot,
torch and grpcio are importable: in the policy's own process under the LeRobot interpreter (``.venv-lerobot`` with
``lerobot[async]``, ``scripts/setup_lerobot.sh``), inside the policy sandbox, which also contains whatever the
server's pickles would do. The sandbox reaches the server only through ``--policy-network HOST:PORT``, at
``127.0.0.1:PORT`` inside: that is the default address here (LeRobot's default port, 8080).

On construction the client waits for the server, sends ``Ready`` and the policy setup (``RemotePolicyConfig``: the
policy type, the checkpoint the server loads, the features of our observation, the actions per chunk), so a wrong
address or checkpoint fails at once. ``reset`` sends ``Ready`` (the server empties its observation queue; it has no
reset of the policy itself, as its own robot client). Each ``predict`` sends one observation (``TimedObservation``,
``must_go``: the server's similarity filter never drops it) with the 14 values under ``JOINT_NAMES``, the cameras as
HxWx3 uint8 and the instruction as ``task``, then asks ``GetActions`` and returns the chunk it predicted, at most
``actions_per_chunk`` rows. A call the server does not answer within ``timeout`` or an empty answer (no observation
within its ``obs_queue_timeout``, or inference failed: its log says which) is a ``PolicyError``; after a lost
connection the next ``reset`` sends the setup again, so a restarted server takes the next episode.

    robofollow eval --policy lerobot-async --policy-network gpu-box:8080 \\
        --policy-kwargs '{"policy_type": "act", "checkpoint": "/models/act/pretrained_model"}'
"""

from __future__ import annotations

import pickle  # nosec B403: LeRobot's wire; the sandbox contains what a server's pickle would do
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.lerobot_features import JOINT_NAMES, STATE_FEATURE, image_key
from robofollow_ros.state_layout import ACTION_DIM, CAMERAS

DEFAULT_PORT = 8080
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class LeRobotAsyncPolicy:
    """Client of a LeRobot async inference server (module docstring).

    Args:
        checkpoint: what the server loads (``pretrained_name_or_path``: a path on the server's machine).
        policy_type: the LeRobot policy type (``act``, ``diffusion``, ``smolvla``, ``pi0``, ...).
        host, port: the server (inside the sandbox: ``127.0.0.1`` and the port of ``--policy-network``).
        actions_per_chunk: rows the server returns per query (it cuts the predicted chunk).
        device: the server's torch device.
        cameras: checkpoint image feature (after ``observation.images.``) -> our camera; default our three cameras
            under their own names (``robofollow collect --format lerobot``).
        image_size: (height, width) of the images announced in the setup sent on construction (the cell's 240x320;
            images of another size send the setup again; the server resizes to the policy's input size).
        rename_map: LeRobot's observation rename map, passed to the server's preprocessor.
        timeout: seconds for each call (the setup: ``setup_timeout``, the server loads the checkpoint then).
        connect_retries, retry_interval: waits for a server that is not up yet.

    Raises:
        PolicyError: LeRobot's async extra is missing, the server cannot be reached, or it refused the setup.
    """

    def __init__(
        self,
        checkpoint: str,
        *,
        policy_type: str,
        host: str = '127.0.0.1',
        port: int = DEFAULT_PORT,
        actions_per_chunk: int = 50,
        device: str = 'cpu',
        cameras: Mapping[str, str] | None = None,
        rename_map: Mapping[str, str] | None = None,
        image_size: tuple[int, int] = (240, 320),
        timeout: float = 60.0,
        setup_timeout: float = 300.0,
        connect_retries: int = 20,
        retry_interval: float = 1.0,
    ) -> None:
        try:
            import grpc
            from lerobot.async_inference.helpers import RemotePolicyConfig, TimedObservation
            from lerobot.transport import services_pb2, services_pb2_grpc
            from lerobot.transport.utils import send_bytes_in_chunks
        except ImportError as error:
            raise PolicyError(
                f'LeRobot async inference is not importable here ({error}): run the policy under .venv-lerobot '
                'with lerobot[async] (scripts/setup_lerobot.sh) or set ROBOFOLLOW_LEROBOT_PYTHON'
            ) from error
        if actions_per_chunk < 1:
            raise PolicyError(f'actions_per_chunk must be at least 1, got {actions_per_chunk}')
        chosen = dict(cameras) if cameras is not None else {camera: camera for camera in CAMERAS}
        unknown = sorted(camera for camera in chosen.values() if camera not in CAMERAS)
        if unknown or not chosen:
            raise PolicyError(f'cameras must map image features to {", ".join(CAMERAS)}; got {dict(chosen)}')
        self.grpc = grpc
        self.pb = services_pb2
        self.send_chunks = send_bytes_in_chunks
        self.timed_observation = TimedObservation
        self.address = f'{host}:{int(port)}'
        self.cameras = chosen
        self.timeout = float(timeout)
        self.setup_timeout = float(setup_timeout)
        self.instruction = ''
        self.timestep = 0
        self.needs_setup = True
        self.image_shapes: dict[str, tuple[int, int, int]] = {}
        self.config_of = lambda shapes: RemotePolicyConfig(
            policy_type=policy_type,
            pretrained_name_or_path=checkpoint,
            lerobot_features=self._features(shapes),
            actions_per_chunk=int(actions_per_chunk),
            device=device,
            rename_map=dict(rename_map or {}),
        )
        options = [
            ('grpc.max_receive_message_length', MAX_MESSAGE_BYTES),
            ('grpc.max_send_message_length', MAX_MESSAGE_BYTES),
        ]
        self.channel = grpc.insecure_channel(self.address, options=options)
        self.stub = services_pb2_grpc.AsyncInferenceStub(self.channel)
        for attempt in range(max(1, connect_retries)):
            try:
                grpc.channel_ready_future(self.channel).result(timeout=retry_interval)
                break
            except grpc.FutureTimeoutError:
                if attempt + 1 == max(1, connect_retries):
                    raise PolicyError(
                        f'no LeRobot policy server at {self.address} after {connect_retries} attempts (a sandboxed '
                        'policy reaches only --policy-network HOST:PORT, at 127.0.0.1:PORT)'
                    ) from None
        height, width = (int(side) for side in image_size)
        self._setup(dict.fromkeys(self.cameras, (height, width, 3)))

    def _features(self, shapes: Mapping[str, tuple[int, int, int]]) -> dict[str, dict[str, Any]]:
        """The LeRobot features of our observation as the server builds its inputs from them."""
        features: dict[str, dict[str, Any]] = {
            STATE_FEATURE: {'dtype': 'float32', 'shape': (len(JOINT_NAMES),), 'names': list(JOINT_NAMES)}
        }
        for feature in self.cameras:
            features[image_key(feature)] = {
                'dtype': 'image',
                'shape': shapes[feature],
                'names': ['height', 'width', 'channels'],
            }
        return features

    def _call(self, method: str, request: Any, *, timeout: float) -> Any:
        try:
            return getattr(self.stub, method)(request, timeout=timeout)
        except self.grpc.RpcError as error:
            self.needs_setup = True
            code = error.code().name if callable(getattr(error, 'code', None)) else 'UNKNOWN'
            details = error.details() if callable(getattr(error, 'details', None)) else str(error)
            raise PolicyError(f'LeRobot policy server {self.address}: {method}: {code}: {details}') from None

    def _setup(self, shapes: Mapping[str, tuple[int, int, int]]) -> None:
        """Ready, then the policy setup (the server loads the checkpoint)."""
        self._call('Ready', self.pb.Empty(), timeout=self.timeout)
        setup = self.pb.PolicySetup(data=pickle.dumps(self.config_of(shapes)))
        self._call('SendPolicyInstructions', setup, timeout=self.setup_timeout)
        self.image_shapes = dict(shapes)
        self.needs_setup = False

    def reset(self) -> None:
        """A new episode: the server empties its observation queue (the setup again after a lost connection)."""
        self.timestep = 0
        if self.needs_setup and self.image_shapes:
            self._setup(self.image_shapes)
        else:
            self._call('Ready', self.pb.Empty(), timeout=self.timeout)

    def set_instruction(self, text: str) -> None:
        """Sent as ``task`` with every observation."""
        self.instruction = text

    def predict(self, observation: Any) -> np.ndarray:
        """Send the observation; the server's chunk as [T, 14] float32."""
        raw: dict[str, Any] = dict(zip(JOINT_NAMES, (float(v) for v in observation.state), strict=True))
        shapes: dict[str, tuple[int, int, int]] = {}
        for feature, camera in self.cameras.items():
            if camera not in observation.images:
                raise PolicyError(f'the observation has no {camera!r} image for LeRobot input {image_key(feature)!r}')
            pixels = np.ascontiguousarray(observation.images[camera], dtype=np.uint8)
            raw[feature] = pixels
            shapes[feature] = (int(pixels.shape[0]), int(pixels.shape[1]), int(pixels.shape[2]))
        raw['task'] = self.instruction
        if self.needs_setup or shapes != self.image_shapes:
            self._setup(shapes)
        timed = self.timed_observation(timestamp=time.time(), timestep=self.timestep, observation=raw, must_go=True)
        self.timestep += 1
        chunks = self.send_chunks(pickle.dumps(timed), self.pb.Observation, silent=True)
        self._call('SendObservations', iter(chunks), timeout=self.timeout)
        reply = self._call('GetActions', self.pb.Empty(), timeout=self.timeout)
        data = getattr(reply, 'data', b'')
        if not data:
            raise PolicyError(
                f'LeRobot policy server {self.address} returned no actions for observation #{timed.timestep} (it '
                'had none within its obs_queue_timeout, or inference failed: the server log says which)'
            )
        actions = sorted(pickle.loads(data), key=lambda action: action.get_timestep())  # nosec B301
        chunk = np.stack([np.asarray(action.get_action(), dtype=np.float32).reshape(-1) for action in actions])
        if chunk.ndim != 2 or chunk.shape[1] != ACTION_DIM:
            raise PolicyError(f'LeRobot policy server returned actions of shape {chunk.shape}, not (T, {ACTION_DIM})')
        return chunk

    def close(self) -> None:
        """Close the channel."""
        self.channel.close()
