"""The RoboFollow protocol as data: objects, layouts, task labels, evaluation splits, seeds, entropy.

Pure Python: imports neither rclpy nor MuJoCo. Start with ``get_task``, ``eval_tasks`` and
``training_labels``; ``layout_of`` gives a task's layout, ``scene_objects`` the physical items.

Every "protocol §x.y" cited in this package names a section of ``docs/protocol.md``, the benchmark's rules in this
repository.
"""

from robofollow_ros.benchmark.constants import (
    FLAG_AMBIGUOUS,
    FLAG_COMPLEMENTARY_ROUTE,
    FLAG_LITERAL_DIFFERS,
    LEVELS,
    SCENES,
    TRAINING_CONFIGS,
    VARIANTS,
)
from robofollow_ros.benchmark.registry import (
    eval_tasks,
    get_layout,
    get_task,
    layout_names,
    layout_of,
    libero_reference_entropy,
    matches_pattern,
    parse_level,
    parse_scene,
    perturbed_positions,
    route_references,
    scene_entropy,
    scene_objects,
    seed_offset,
    training_config_counts,
    training_labels,
    trial_seed,
)
from robofollow_ros.benchmark.types import (
    Conditional,
    GroundTruth,
    Layout,
    ObjectSpec,
    Perturbation,
    Placement,
    Task,
    Variant,
)

__all__ = [
    'FLAG_AMBIGUOUS',
    'FLAG_COMPLEMENTARY_ROUTE',
    'FLAG_LITERAL_DIFFERS',
    'LEVELS',
    'SCENES',
    'TRAINING_CONFIGS',
    'VARIANTS',
    'Conditional',
    'GroundTruth',
    'Layout',
    'ObjectSpec',
    'Perturbation',
    'Placement',
    'Task',
    'Variant',
    'eval_tasks',
    'get_layout',
    'get_task',
    'layout_names',
    'layout_of',
    'libero_reference_entropy',
    'matches_pattern',
    'parse_level',
    'parse_scene',
    'perturbed_positions',
    'route_references',
    'scene_entropy',
    'scene_objects',
    'seed_offset',
    'training_config_counts',
    'training_labels',
    'trial_seed',
]
