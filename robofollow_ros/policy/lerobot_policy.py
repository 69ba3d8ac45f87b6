"""``LeRobotPolicy``: a LeRobot checkpoint (``pretrained_model`` folder) as a robofollow policy.

It runs in the policy's own process under an interpreter that has LeRobot and torch (``policy.lerobot_python``),
never in the evaluator's: this module imports numpy only until a policy is built. The checkpoint is loaded with
LeRobot's own API: the policy class of its config's ``type`` (``from_pretrained``) and the pre- and
post-processors saved beside it (``make_pre_post_processors``: normalisation statistics, device, batching).

Observation to input features, by name: camera ``<camera>`` to ``observation.images.<camera>`` (the names
``robofollow collect --format lerobot`` writes; ``cameras`` maps other feature names to our cameras), the 14-D
state to ``observation.state``, the instruction to ``task``. Images are scaled to the checkpoint's image size when
they differ. A checkpoint whose features do not fit (an image feature no camera maps to, a state or action that is
not 14 values, an input we do not have) is refused in one line naming the feature.

Each query returns the actions LeRobot itself executes per prediction: ``select_action`` called
``n_action_steps`` times on the query's observation (the policy's own action queue: ACT predicts its chunk once and
hands it out row by row; Diffusion Policy keeps its observation history). A policy with temporal ensembling
predicts every step, so it returns one row per query unless ``n_action_steps`` is given.

``predict_batch`` answers several episodes' queries in one forward pass (``serve-policy --batch``): the first
``n_action_steps`` rows of ``predict_action_chunk`` on the stacked inputs, what ``select_action`` hands out over a
query. Only a checkpoint that keeps nothing between queries can be batched (``batchable``: a chunk API, one
observation step, no temporal ensembling; ACT as trained here), since the episodes of a batch share the policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy.lerobot_features import ACTION_FEATURE, IMAGE_PREFIX, STATE_FEATURE, image_key
from robofollow_ros.state_layout import ACTION_DIM, CAMERAS, STATE_DIM


def camera_for_features(image_features: list[str], cameras: Mapping[str, str] | None) -> dict[str, str]:
    """Each image feature's camera: ``cameras[feature]`` (a full feature name or its part after
    ``observation.images.``), else the part after the prefix when it is one of ours.

    Raises:
        PolicyError: a feature no camera maps to, or a mapping to a camera we do not have.
    """
    mapping = dict(cameras or {})
    chosen: dict[str, str] = {}
    for feature in image_features:
        short = feature.removeprefix(IMAGE_PREFIX)
        camera = mapping.get(feature, mapping.get(short, short))
        if camera not in CAMERAS:
            raise PolicyError(
                f'LeRobot checkpoint input {feature!r} has no camera here (cameras: {", ".join(CAMERAS)}); map it '
                'with --policy-kwargs \'{"cameras": {"' + short + '": "<camera>"}}\''
            )
        chosen[feature] = camera
    return chosen


def check_features(config: Any, *, cameras: Mapping[str, str] | None) -> dict[str, str]:
    """The camera of every image input of a LeRobot policy ``config``; refuses features that do not fit.

    Raises:
        PolicyError: one line naming the feature that does not fit.
    """
    known = {STATE_FEATURE}
    image_features = [name for name in config.input_features if name.startswith(IMAGE_PREFIX)]
    for name, feature in config.input_features.items():
        if name in known or name in image_features:
            continue
        raise PolicyError(
            f'LeRobot checkpoint input {name!r} ({feature.type}) is not something robofollow observes (it gives '
            f'{", ".join(image_key(c) for c in CAMERAS)} and {STATE_FEATURE})'
        )
    state = config.input_features.get(STATE_FEATURE)
    if state is not None and tuple(state.shape) != (STATE_DIM,):
        raise PolicyError(
            f'LeRobot checkpoint input {STATE_FEATURE!r} has shape {tuple(state.shape)}, not ({STATE_DIM},)'
        )
    action = config.output_features.get(ACTION_FEATURE)
    if action is None or tuple(action.shape) != (ACTION_DIM,):
        shape = None if action is None else tuple(action.shape)
        raise PolicyError(f'LeRobot checkpoint output {ACTION_FEATURE!r} has shape {shape}, not ({ACTION_DIM},)')
    return camera_for_features(image_features, cameras)


class LeRobotPolicy:
    """A LeRobot checkpoint answering robofollow queries (module docstring).

    Args:
        path: the checkpoint's ``pretrained_model`` folder (``config.json``, ``model.safetensors`` and the
            processors' files).
        device: torch device (``cpu`` here: no GPU on these machines).
        cameras: image feature (full or after ``observation.images.``) -> our camera, for checkpoints trained on
            other names.
        n_action_steps: actions per query instead of the config's ``n_action_steps``.

    Raises:
        PolicyError: no checkpoint there, LeRobot cannot load it, or its features do not fit.
    """

    def __init__(
        self,
        path: str,
        *,
        device: str = 'cpu',
        cameras: Mapping[str, str] | None = None,
        n_action_steps: int | None = None,
    ) -> None:
        folder = Path(path).expanduser()
        if not (folder / 'config.json').is_file():
            raise PolicyError(f'no LeRobot checkpoint at {folder}: a pretrained_model folder holds config.json')
        try:
            import torch
            from lerobot.configs.policies import PreTrainedConfig
            from lerobot.policies.factory import get_policy_class, make_pre_post_processors
        except ImportError as error:
            raise PolicyError(
                f'LeRobot is not importable in this interpreter ({error}): run the policy under .venv-lerobot '
                '(scripts/setup_lerobot.sh) or set ROBOFOLLOW_LEROBOT_PYTHON'
            ) from error
        self.torch = torch
        config = PreTrainedConfig.from_pretrained(str(folder))
        if n_action_steps is not None:
            config.n_action_steps = int(n_action_steps)
        self.cameras = check_features(config, cameras=cameras)
        self.policy = get_policy_class(config.type).from_pretrained(str(folder), config=config)
        self.policy.to(device)
        self.policy.eval()
        overrides = {'device_processor': {'device': device}}
        self.preprocess, self.postprocess = make_pre_post_processors(
            self.policy.config,
            pretrained_path=str(folder),
            preprocessor_overrides=overrides,
            postprocessor_overrides=overrides,
        )
        self.device = device
        self.rows = max(1, int(getattr(self.policy.config, 'n_action_steps', 1) or 1))
        self.image_shapes = {name: tuple(self.policy.config.input_features[name].shape) for name in self.cameras}
        self.instruction = ''
        config = self.policy.config
        self.batchable = (
            callable(getattr(self.policy, 'predict_action_chunk', None))
            and int(getattr(config, 'n_obs_steps', 1) or 1) == 1
            and getattr(config, 'temporal_ensemble_coeff', None) is None
        )

    def reset(self) -> None:
        self.policy.reset()
        self.preprocess.reset()
        self.postprocess.reset()

    def set_instruction(self, text: str) -> None:
        self.instruction = text

    def predict(self, observation: Any) -> np.ndarray:
        batch = self.preprocess(self.inputs(observation))
        with self.torch.inference_mode():
            actions = [self.postprocess(self.policy.select_action(batch)) for _ in range(self.rows)]
        chunk = self.torch.stack([action.reshape(-1) for action in actions]).float().cpu().numpy()
        return np.asarray(chunk, dtype=np.float32)

    def predict_batch(self, observations: Sequence[Any], instructions: Sequence[str | None]) -> list[np.ndarray]:
        """One forward pass for several episodes' queries (``batchable`` checkpoints only); a chunk for each.

        Raises:
            PolicyError: the checkpoint keeps history between queries, or the lists differ in length.
        """
        if not self.batchable:
            raise PolicyError(
                f'this {self.policy.config.type} checkpoint keeps history between queries (observation steps or '
                'temporal ensembling): it cannot be batched'
            )
        if len(observations) != len(instructions) or not observations:
            raise PolicyError('a batch needs one instruction per observation, and at least one')
        torch = self.torch
        parts = [self.inputs(o, instruction=i or '') for o, i in zip(observations, instructions, strict=True)]
        stacked: dict[str, Any] = {key: torch.cat([part[key] for part in parts]) for key in parts[0] if key != 'task'}
        stacked['task'] = [part['task'] for part in parts]
        batch = self.preprocess(stacked)
        with torch.inference_mode():
            chunks = self.policy.predict_action_chunk(batch)[:, : self.rows]
            actions = self.postprocess(chunks)
        values = actions.float().cpu().numpy().astype(np.float32)
        return [values[index] for index in range(len(parts))]

    def inputs(self, observation: Any, *, instruction: str | None = None) -> dict[str, Any]:
        """The observation as LeRobot's unprocessed inputs: images (1, 3, H, W) in [0, 1] at the checkpoint's
        size, the state (1, 14), the task text (``instruction``, else the one set)."""
        torch = self.torch
        inputs: dict[str, Any] = {
            STATE_FEATURE: torch.from_numpy(np.array(observation.state, dtype=np.float32)).reshape(1, STATE_DIM),
            'task': self.instruction if instruction is None else instruction,
        }
        for feature, camera in self.cameras.items():
            if camera not in observation.images:
                raise PolicyError(f'the observation has no {camera!r} image for LeRobot input {feature!r}')
            pixels = np.array(observation.images[camera], dtype=np.uint8)  # a writable copy for torch
            image = torch.from_numpy(pixels).permute(2, 0, 1).float().div(255.0)[None]
            _, height, width = self.image_shapes[feature]
            if image.shape[-2:] != (height, width):
                image = torch.nn.functional.interpolate(
                    image, size=(height, width), mode='bilinear', antialias=True, align_corners=False
                )
            inputs[feature] = image
        return inputs
