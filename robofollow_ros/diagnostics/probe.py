"""Counterfactual-instruction probe: one scene, one seed, every instruction the configuration admits.

For each training configuration, the probe resets the cell to the same layout with the same seed and
runs the policy once per instruction that configuration admits: its training labels and the L2 rewrites
set in its layout. If the policy follows instructions, what it goes for changes exactly where the
instructions ask for different things. *Instruction sensitivity* is the share of instruction pairs that
ask for different choices for which the policy made both required choices; *change rate* is the share
for which its choices differed at all. A language-blind policy does the same thing under every
instruction, so both are 0; the expert scores 100 %.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.constants import TRAINING_CONFIGS
from robofollow_ros.benchmark.types import Layout, Task, Variant
from robofollow_ros.errors import RegistryError, TrajectoryError
from robofollow_ros.evaluation.environment import Environment
from robofollow_ros.evaluation.episode import EpisodeLimits, run_episode
from robofollow_ros.evaluation.guard import GuardedPolicy
from robofollow_ros.referee.score import score_episode
from robofollow_ros.referee.selection import Selection, required_selection

PROBE_ID_PREFIX = 'probe/'


def config_layout(config: str) -> Layout:
    """The layout of a training configuration (``scene1`` -> Scene 1 ``default``; ``scene4_2`` -> itself)."""
    labels = registry.training_labels(config=config)
    return registry.get_layout(labels[0].scene, labels[0].layout)


def probe_tasks(config: str, *, variant: Variant = 'published') -> list[Task]:
    """The instructions a configuration admits: its training labels, then the L2 rewrites in its layout.

    Raises:
        RegistryError: ``config`` is not a training configuration.
    """
    labels = registry.training_labels(config=config)
    layout = config_layout(config)
    rewrites = [
        task for task in registry.eval_tasks(scene=layout.scene, level=2, variant=variant) if task.layout == layout.name
    ]
    return [*labels, *rewrites]


def probe_seed(config: str, round_: int) -> int:
    """The one seed every instruction of ``config`` shares in a round (the protocol's seed rule on a probe id)."""
    return registry.trial_seed(f'{PROBE_ID_PREFIX}{config}', round_)


@dataclass(frozen=True)
class ProbeRun:
    """One instruction of the probe: what it required and what the policy went for."""

    config: str
    round: int
    seed: int
    task_id: str
    instruction: str
    required: Selection
    observed: Selection | None
    intent_score: float | None = None
    error: str | None = None

    def to_record(self) -> dict[str, Any]:
        """The run as a JSON-able record."""
        return {
            'config': self.config,
            'round': self.round,
            'seed': self.seed,
            'task_id': self.task_id,
            'instruction': self.instruction,
            'required': self.required.to_dict(),
            'observed': None if self.observed is None else self.observed.to_dict(),
            'intent_score': self.intent_score,
            'error': self.error,
        }


@dataclass(frozen=True)
class Sensitivity:
    """Instruction sensitivity of one group of probe runs.

    Attributes:
        pairs: instruction pairs (same configuration and round) that ask for different choices.
        followed: of those, pairs where the policy made the required choices under both instructions.
        changed: of those, pairs where the policy's choices differed where the instructions differ.
    """

    pairs: int
    followed: int
    changed: int

    @property
    def sensitivity(self) -> float | None:
        """``followed / pairs`` (``None`` without pairs)."""
        return None if self.pairs == 0 else self.followed / self.pairs

    @property
    def change_rate(self) -> float | None:
        """``changed / pairs`` (``None`` without pairs)."""
        return None if self.pairs == 0 else self.changed / self.pairs


PHYSICAL_ONLY = frozenset({'branch'})
"""Fields left out of pair comparisons: a branch is named per task ("then" of one conditional can be the very
same motion as "else" of another); the arm and object it resolves to are compared instead."""


def _differing(a: Selection, b: Selection) -> tuple[str, ...]:
    both = (set(a.constrained()) & set(b.constrained())) - PHYSICAL_ONLY
    return tuple(name for name in sorted(both) if getattr(a, name) != getattr(b, name))


def pair_sensitivity(runs: Sequence[ProbeRun]) -> Sensitivity:
    """Sensitivity over every pair of ``runs`` (one configuration and round) that ask for different choices.

    A run without an observed selection (its episode could not be scored) counts as not following.
    """
    pairs = followed = changed = 0
    for a, b in itertools.combinations(runs, 2):
        differing = _differing(a.required, b.required)
        if not differing:
            continue
        pairs += 1
        if a.observed is None or b.observed is None:
            continue
        seen_a, seen_b = a.observed, b.observed
        if any(getattr(seen_a, name) != getattr(seen_b, name) for name in differing):
            changed += 1
        if all(
            getattr(seen_a, name) == getattr(a.required, name) and getattr(seen_b, name) == getattr(b.required, name)
            for name in differing
        ):
            followed += 1
    return Sensitivity(pairs=pairs, followed=followed, changed=changed)


def sensitivity_by_scene(runs: Iterable[ProbeRun]) -> dict[int, Sensitivity]:
    """Pairs are formed within a configuration and round, then summed per scene."""
    groups: dict[tuple[str, int], list[ProbeRun]] = defaultdict(list)
    for run in runs:
        groups[(run.config, run.round)].append(run)
    totals: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    for (config, _), members in groups.items():
        scene = config_layout(config).scene
        result = pair_sensitivity(members)
        totals[scene][0] += result.pairs
        totals[scene][1] += result.followed
        totals[scene][2] += result.changed
    return {scene: Sensitivity(*values) for scene, values in sorted(totals.items())}


def resolve_configs(scenes: Sequence[int] | None, configs: Sequence[str] | None) -> list[str]:
    """Training configurations selected by scene numbers and/or names (default: all six).

    Raises:
        RegistryError: a name is not a training configuration.
    """
    for name in configs or ():
        if name not in TRAINING_CONFIGS:
            raise RegistryError(
                f'unknown training configuration {name!r}: expected one of {", ".join(TRAINING_CONFIGS)}'
            )
    chosen = [
        config
        for config in TRAINING_CONFIGS
        if (not configs or config in configs) and (not scenes or config_layout(config).scene in scenes)
    ]
    if not chosen:
        raise RegistryError('no training configuration matches the given scenes and configurations')
    return chosen


def run_probe(
    env: Environment,
    policy: GuardedPolicy,
    configs: Sequence[str],
    *,
    rounds: Sequence[int] = (1,),
    variant: Variant = 'published',
    limit: int | None = None,
    limits: EpisodeLimits | None = None,
    on_run: Callable[[ProbeRun], None] | None = None,
) -> list[ProbeRun]:
    """Run ``policy`` on every probe instruction of ``configs`` in ``env`` and read its selections.

    Args:
        env: an evaluation environment (``run_episode``'s).
        policy: the policy under test (privileged or not, as its factory says).
        configs: training configurations to probe.
        rounds: rounds; each gives every instruction of a configuration one shared seed.
        variant: ground-truth variant of the L2 rewrites.
        limit: at most this many instructions per configuration (the first ones), for quick looks.
        limits: episode limits (protocol defaults).
        on_run: called after every run (progress display).
    """
    runs: list[ProbeRun] = []
    for round_ in rounds:
        for config in configs:
            layout = config_layout(config)
            seed = probe_seed(config, round_)
            for task in probe_tasks(config, variant=variant)[:limit]:
                outcome = run_episode(env, policy, task, seed=seed, layout=layout, limits=limits)
                observed: Selection | None
                intent: float | None
                try:
                    result = score_episode(task, outcome.trajectory, layout=layout, variant=variant)
                    observed, intent = result.selection, result.intent_score
                    error = outcome.policy_error
                except TrajectoryError as failure:
                    observed, intent, error = None, None, f'not readable: {failure}'
                run = ProbeRun(
                    config=config,
                    round=round_,
                    seed=seed,
                    task_id=task.task_id,
                    instruction=task.instruction,
                    required=required_selection(task),
                    observed=observed,
                    intent_score=intent,
                    error=error,
                )
                runs.append(run)
                if on_run is not None:
                    on_run(run)
    return runs


def sensitivity_markdown(by_scene: Mapping[int, Sensitivity], *, policy: str) -> str:
    """The per-scene sensitivity table as Markdown."""
    lines = [
        f'Instruction sensitivity of `{policy}` (pairs of instructions that ask for different choices)',
        '',
        '| Scene | Pairs | Followed | Sensitivity | Changed choice |',
        '|---|---|---|---|---|',
    ]
    for scene, result in by_scene.items():
        lines.append(
            f'| S{scene} | {result.pairs} | {result.followed} | {_percent(result.sensitivity)} | '
            f'{_percent(result.change_rate)} |'
        )
    pairs = sum(r.pairs for r in by_scene.values())
    total = Sensitivity(pairs, sum(r.followed for r in by_scene.values()), sum(r.changed for r in by_scene.values()))
    lines.append(
        f'| **All** | {pairs} | {total.followed} | {_percent(total.sensitivity)} | {_percent(total.change_rate)} |'
    )
    return '\n'.join(lines) + '\n'


def _percent(value: float | None) -> str:
    return '-' if value is None else f'{100 * value:.1f} %'
