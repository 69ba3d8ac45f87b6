"""Gymnasium registration: ``import robofollow_ros.gym_env`` then ``gymnasium.make("robofollow/RoboFollow-v0", ...)``.

Registered ids: ``robofollow/RoboFollow-v0`` (pass ``task_id``), ``robofollow/RoboFollow-Scene<s>-v0`` (a random
evaluation task of scene s per reset) and ``robofollow/RoboFollow-Scene<s>-L<l>-v0`` (scene s, level l). Every id
has the protocol budget, 10 queries x 50 rows, as ``max_episode_steps``.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from robofollow_ros.benchmark.constants import ACTIONS_PER_QUERY, MAX_QUERIES
from robofollow_ros.sim.gl import choose_gl_backend

choose_gl_backend()  # the Gymnasium entry point: before the environment imports MuJoCo

from robofollow_ros.gym_env.env import RoboFollowEnv  # noqa: E402

MAX_EPISODE_STEPS = MAX_QUERIES * ACTIONS_PER_QUERY
ENTRY_POINT = 'robofollow_ros.gym_env.env:RoboFollowEnv'


def register_envs() -> list[str]:
    """Register every RoboFollow id (idempotent); returns the ids."""
    ids: dict[str, dict[str, int]] = {'robofollow/RoboFollow-v0': {}}
    for scene in range(1, 5):
        ids[f'robofollow/RoboFollow-Scene{scene}-v0'] = {'scene': scene}
        for level in range(4):
            ids[f'robofollow/RoboFollow-Scene{scene}-L{level}-v0'] = {'scene': scene, 'level': level}
    for env_id, kwargs in ids.items():
        if env_id not in registry:
            register(id=env_id, entry_point=ENTRY_POINT, max_episode_steps=MAX_EPISODE_STEPS, kwargs=kwargs)
    return list(ids)


ENV_IDS = register_envs()

__all__ = ['ENV_IDS', 'MAX_EPISODE_STEPS', 'RoboFollowEnv', 'register_envs']
