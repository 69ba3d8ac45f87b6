"""Trials and the result records built from their episodes (scored, unscored, or never run)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from robofollow_ros.benchmark.types import Layout, Task, Variant
from robofollow_ros.errors import TrajectoryError
from robofollow_ros.evaluation.episode import EpisodeOutcome
from robofollow_ros.evaluation.guard import PolicyFailure
from robofollow_ros.evaluation.identity import RunIdentity
from robofollow_ros.evaluation.options import SuiteOptions
from robofollow_ros.evaluation.results import TrialKey
from robofollow_ros.referee.score import score_episode
from robofollow_ros.referee.trajectory import Trajectory
from robofollow_ros.robot.specs import DEFAULT_ROBOT

SIM_SECONDS_DIGITS = 6
"""Decimals of a record's ``sim_seconds`` (microseconds), the same over the graph and in-process."""


@dataclass(frozen=True)
class Trial:
    """One task in one round, with its protocol seed."""

    task: Task
    round: int
    seed: int

    @property
    def key(self) -> TrialKey:
        """The (task id, round) pair identifying the trial."""
        return self.task.task_id, self.round


def episode_meta(trial: Trial, *, variant: Variant, robot: str = DEFAULT_ROBOT) -> dict[str, Any]:
    """The episode description stored with a recorded episode."""
    return {
        'task_id': trial.task.task_id,
        'variant': variant,
        'robot': robot,
        'seed': trial.seed,
        'round': trial.round,
        'layout': trial.task.layout,
        'level': trial.task.level_tag,
        'arm': trial.task.arm,
        'instruction': trial.task.instruction,
    }


def unscored_record(trial: Trial, *, reason: str, variant: Variant) -> dict[str, Any]:
    """A zero-score record for an episode that could not be scored (too short, or no policy to run)."""
    return {
        'task_id': trial.task.task_id,
        'instruction': trial.task.instruction,
        'scene': trial.task.scene,
        'layout': trial.task.layout,
        'level_tag': trial.task.level_tag,
        'arm': trial.task.arm,
        'base_task_type': trial.task.resolved_truth.action,
        'variant': variant,
        'intent_score': 0.0,
        'exec_score': 0.0,
        'intent_ok': False,
        'exec_ok': False,
        'completion_ok': False,
        'intent_msg': reason,
        'exec_msg': reason,
        'stages': [],
        'scored': False,
    }


def score_record(trial: Trial, trajectory: Trajectory, *, layout: Layout, variant: Variant) -> dict[str, Any]:
    """The referee's record of a trial's trajectory (unscored if too short to score), with its sim seconds.

    Every runner and the graph's referee node score here, so live and in-process records agree.
    """
    try:
        result = score_episode(
            trial.task, trajectory, layout=layout, meta={'seed': trial.seed, 'round': trial.round}, variant=variant
        )
        record = {**result.to_record(), 'scored': True}
    except TrajectoryError as error:
        record = unscored_record(trial, reason=f'not scored: {error}', variant=variant)
        record['frames'] = len(trajectory)
    # Rounded to the microsecond: the graph's times come from nanosecond stamps, the in-process ones from MuJoCo's
    # summed time steps, and the two differ in float noise (4.52 against 4.5199999999998655).
    seconds = float(trajectory.t[-1] - trajectory.t[0]) if len(trajectory) else 0.0
    record['sim_seconds'] = round(seconds, SIM_SECONDS_DIGITS)
    return record


def make_record(
    trial: Trial, outcome: EpisodeOutcome, *, layout: Layout, options: SuiteOptions, identity: RunIdentity
) -> dict[str, Any]:
    """Score the episode and return its result record with the trial's bookkeeping fields."""
    record = score_record(trial, outcome.trajectory, layout=layout, variant=options.variant)
    record.update(
        bookkeeping(trial, identity=identity, policy_error=outcome.policy_error, error_kind=outcome.error_kind)
    )
    record.update(
        {
            'queries': outcome.queries,
            'executed_rows': outcome.executed_rows,
            'wall_seconds': round(outcome.wall_seconds, 3),
        }
    )
    return record


def bookkeeping(
    trial: Trial, *, identity: RunIdentity, policy_error: str | None, error_kind: str | None
) -> dict[str, Any]:
    """The fields every record of a run carries besides its scores."""
    return {
        'round': trial.round,
        'seed': trial.seed,
        'policy': identity.policy,
        'robot': identity.robot,
        'privileged': identity.privileged,
        'isolation': identity.isolation,
        'run_id': identity.digest,
        'policy_error': policy_error,
        'error_kind': error_kind,
        **({'policy_network': identity.policy_network} if identity.policy_network else {}),
    }


def build_failure_record(trial: Trial, failure: PolicyFailure, *, identity: RunIdentity) -> dict[str, Any]:
    """The record of a trial whose policy could not be built: unscored, with the failure."""
    record = unscored_record(trial, reason=f'not run: {failure}', variant=identity.variant)  # type: ignore[arg-type]
    record.update(bookkeeping(trial, identity=identity, policy_error=str(failure), error_kind=failure.kind))
    record.update({'queries': 0, 'executed_rows': 0, 'frames': 0, 'sim_seconds': 0.0, 'wall_seconds': 0.0})
    return record
