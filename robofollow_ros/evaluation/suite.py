"""An evaluation suite run in-process: plan the trials, run and score each, flush, resume, summarise."""

from __future__ import annotations

import datetime as _dt
import json
import platform
import resource
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from robofollow_ros import __version__
from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import Layout, Task, Variant
from robofollow_ros.errors import RoboFollowError, TrajectoryError
from robofollow_ros.evaluation.episode import EpisodeLimits, EpisodeOutcome, run_episode
from robofollow_ros.evaluation.progress import Progress
from robofollow_ros.evaluation.results import ResultsFile, TrialKey, trial_key
from robofollow_ros.policy.base import needs_images
from robofollow_ros.policy.factory import make_policy
from robofollow_ros.referee.config import default_config
from robofollow_ros.referee.score import score_episode
from robofollow_ros.referee.trajectory import Trajectory

RecordMode = Literal['none', 'json', 'bag']
RESULTS_NAME = 'results.jsonl'
RUN_NAME = 'run.json'


@dataclass(frozen=True)
class SuiteOptions:
    """What to evaluate and where to write it."""

    out: Path
    policy: str
    policy_kwargs: dict[str, Any] = field(default_factory=dict)
    scenes: Sequence[int] | None = None
    levels: Sequence[int] | None = None
    pattern: str | None = None
    task_ids: Sequence[str] | None = None
    rounds: int = 1
    first_round: int = 1
    variant: Variant = 'literal'
    record: RecordMode = 'none'
    limits: EpisodeLimits = field(default_factory=EpisodeLimits)


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


def select_tasks(options: SuiteOptions) -> list[Task]:
    """Evaluation tasks matching the filters (or exactly ``task_ids``), in registry order."""
    if options.task_ids:
        return [registry.get_task(task_id, variant=options.variant) for task_id in options.task_ids]
    scenes = list(options.scenes) if options.scenes else [None]
    levels = list(options.levels) if options.levels else [None]
    tasks = [
        task
        for scene in scenes
        for level in levels
        for task in registry.eval_tasks(scene=scene, level=level, variant=options.variant, pattern=options.pattern)
    ]
    if not tasks:
        raise RoboFollowError('no evaluation task matches the given scene, level and pattern')
    return tasks


def plan_trials(options: SuiteOptions) -> list[Trial]:
    """Every (task, round) of the suite with its seed (protocol §1.7)."""
    rounds = range(options.first_round, options.first_round + options.rounds)
    return [
        Trial(task=task, round=round_, seed=registry.trial_seed(task.task_id, round_))
        for round_ in rounds
        for task in select_tasks(options)
    ]


def _git_commit() -> str | None:
    try:
        result = subprocess.run(
            ['git', 'rev-parse', 'HEAD'], capture_output=True, text=True, check=True, cwd=Path(__file__).parent
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return result.stdout.strip() or None


def _write_run_file(options: SuiteOptions, *, status: str, expected: int, completed: int, runtime: str) -> None:
    run = {
        'status': status,
        'updated': _dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds'),
        'robofollow_ros': __version__,
        'git_commit': _git_commit(),
        'python': platform.python_version(),
        'metric_version': default_config().metric_version,
        'runtime': runtime,
        'completion_aggregation': 'task-macro',
        'options': {**asdict(options), 'out': str(options.out)},
        'expected_trials': expected,
        'completed_trials': completed,
        'peak_rss_mib': round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
    }
    path = options.out / RUN_NAME
    path.write_text(json.dumps(run, indent=2, default=str) + '\n', encoding='utf-8')


def _record_episode(options: SuiteOptions, trial: Trial, outcome: EpisodeOutcome, record: dict[str, Any]) -> str:
    folder = options.out / 'episodes'
    folder.mkdir(parents=True, exist_ok=True)
    stem = f'{trial.task.task_id}__r{trial.round:02d}'
    meta = {
        'task_id': trial.task.task_id,
        'variant': options.variant,
        'seed': trial.seed,
        'round': trial.round,
        'layout': trial.task.layout,
        'level': trial.task.level_tag,
        'arm': trial.task.arm,
        'instruction': trial.task.instruction,
    }
    if options.record == 'bag':
        from robofollow_ros.bags import write_episode_bag

        path = folder / stem
        write_episode_bag(path, meta=meta, trajectory=outcome.trajectory, result=record)
    else:
        from robofollow_ros.referee.trajectory_json import dump_trajectory

        path = folder / f'{stem}.json'
        dump_trajectory(path, outcome.trajectory, task_id=trial.task.task_id, variant=options.variant, meta=meta)
    return str(path.relative_to(options.out))


def unscored_record(trial: Trial, *, reason: str, variant: Variant) -> dict[str, Any]:
    """A zero-score record for an episode too short to score (e.g. the policy failed on its first query)."""
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
    }


def score_record(trial: Trial, trajectory: Trajectory, *, layout: Layout, variant: Variant) -> dict[str, Any]:
    """Score a trial's trajectory: its result record (unscored if too short) with round, seed and sim seconds.

    The in-process suite and the referee node both build records here, so live and in-process records agree.
    """
    try:
        result = score_episode(
            trial.task,
            trajectory,
            layout=layout,
            meta={'seed': trial.seed, 'round': trial.round, 'variant': variant},
        )
        record = result.to_record()
    except TrajectoryError as error:
        record = unscored_record(trial, reason=f'not scored: {error}', variant=variant)
        record['frames'] = len(trajectory)
    record.update(
        {
            'round': trial.round,
            'seed': trial.seed,
            'sim_seconds': float(trajectory.t[-1] - trajectory.t[0]) if len(trajectory) else 0,
        }
    )
    return record


def make_record(trial: Trial, outcome: EpisodeOutcome, *, layout: Layout, options: SuiteOptions) -> dict[str, Any]:
    """Score the episode and return its result record with the trial's bookkeeping fields."""
    record = score_record(trial, outcome.trajectory, layout=layout, variant=options.variant)
    record.update(
        {
            'policy': options.policy,
            'policy_error': outcome.policy_error,
            'queries': outcome.queries,
            'executed_rows': outcome.executed_rows,
            'wall_seconds': round(outcome.wall_seconds, 3),
        }
    )
    return record


class TrialRunner(Protocol):
    """Runs one trial and returns its complete result record (how: in this process, or over the ROS graph)."""

    runtime: str

    def run_trial(self, trial: Trial, layout: Layout) -> dict[str, Any]:
        """Run and score ``trial``; the record has ``wall_seconds``."""

    def close(self) -> None:
        """Release the policy, the simulator or the graph connection."""


class InProcessRunner:
    """Simulates, acts and scores in this process."""

    runtime = 'in-process'

    def __init__(self, options: SuiteOptions) -> None:
        from robofollow_ros.sim.env import CellEnv

        self.options = options
        self.policy = make_policy(options.policy, kwargs=options.policy_kwargs)
        self.env = CellEnv(render=needs_images(self.policy))

    def run_trial(self, trial: Trial, layout: Layout) -> dict[str, Any]:
        """Run the episode with ``run_episode`` and score it."""
        options = self.options
        outcome = run_episode(self.env, self.policy, trial.task, seed=trial.seed, layout=layout, limits=options.limits)
        record = make_record(trial, outcome, layout=layout, options=options)
        if options.record != 'none':
            record['episode_file'] = _record_episode(options, trial, outcome, record)
        return record

    def close(self) -> None:
        """Close the policy (if it can be) and the simulator."""
        close = getattr(self.policy, 'close', None)
        if close is not None:
            close()
        self.env.close()


def run_suite(
    options: SuiteOptions, *, progress: bool = True, runner: TrialRunner | None = None
) -> list[dict[str, Any]]:
    """Run every trial not yet in ``out/results.jsonl``; returns all records of the suite.

    ``runner`` runs each trial (default: ``InProcessRunner``); planning, resuming, the results file, progress and
    ``run.json`` are the same whatever runs the trials.
    """
    options.out.mkdir(parents=True, exist_ok=True)
    results = ResultsFile(options.out / RESULTS_NAME)
    trials = plan_trials(options)
    done = results.done()
    todo = [trial for trial in trials if trial.key not in done]
    wanted = {trial.key for trial in trials}
    runtime = runner.runtime if runner is not None else InProcessRunner.runtime
    _write_run_file(options, status='running', expected=len(trials), completed=len(trials) - len(todo), runtime=runtime)
    display = Progress(len(trials), already_done=len(trials) - len(todo)) if progress else None
    runner = runner or InProcessRunner(options)
    try:
        for trial in todo:
            record = runner.run_trial(trial, registry.layout_of(trial.task))
            results.append(record)
            if display is not None:
                display.update(record, wall_seconds=float(record.get('wall_seconds', 0.0)))
    except BaseException:
        completed = len(results.done() & wanted)
        _write_run_file(options, status='interrupted', expected=len(trials), completed=completed, runtime=runtime)
        raise
    finally:
        runner.close()
    completed = len(results.done() & wanted)
    _write_run_file(options, status='complete', expected=len(trials), completed=completed, runtime=runtime)
    return [record for record in results.records if trial_key(record) in wanted]
