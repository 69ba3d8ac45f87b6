"""``BlindPolicy``: the language-blind baseline — one fixed behaviour per scene configuration.

It ignores the instruction and the task's ground truth. In every episode it performs the behaviour of
one training label of the task's training configuration (``Task.config``, the six configurations of
protocol §2.0): the first label, in protocol order, whose objects all exist in the episode's layout,
grounded in that layout by object name (and executed by the expert's planners). So it does what a
policy that only recognises the scene could do at best without reading: always the same thing.
The fixed labels are: Scene 1 pick up yellow block 1 (left arm); Scene 2 pick up the large red
cylinder; Scene 3 red slab over yellow to the blue label, short side front; scene4_1 pick the cube in
the bowl (in the empty-bowl layout 4.4, the yellow cylinder); scene4_2 pick the yellow cylinder;
scene4_3 unstack the blue cube to slot 5.
"""

from __future__ import annotations

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import Layout, Task
from robofollow_ros.errors import PolicyError
from robofollow_ros.sim.expert.planners import Assignment
from robofollow_ros.sim.expert.policy import ExpertPolicy
from robofollow_ros.sim.expert.routes import route_objects


def fixed_label(task: Task, layout: Layout) -> Task:
    """The training label whose behaviour the blind baseline performs for ``task`` in ``layout``.

    Raises:
        PolicyError: no label of the task's configuration can be grounded in the layout.
    """
    present = set(layout.object_names)
    for label in registry.training_labels(config=task.config):
        truth = label.resolved_truth
        names = (truth.source, truth.target, truth.route_object, truth.then_source)
        if all(name is None or name in present for name in names):
            return label
    raise PolicyError(f'no training label of {task.config!r} can be grounded in layout {layout.name!r}')


class BlindPolicy(ExpertPolicy):
    """Language-blind baseline: the expert performing a fixed training label of the task's configuration."""

    def assignment_for(self, task: Task, layout: Layout) -> Assignment:
        """The fixed label's ground truth in the episode's layout (the task's own truth is ignored)."""
        truth = fixed_label(task, layout).resolved_truth
        return Assignment(truth=truth, layout=layout, route_objects=route_objects(truth, layout))
