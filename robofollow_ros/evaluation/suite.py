"""An evaluation suite run in-process: plan the trials, run and score each, flush, resume, summarise."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from robofollow_ros import __version__
from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import Layout, Task, Variant
from robofollow_ros.errors import RoboFollowError, RunFolderError, TrajectoryError
from robofollow_ros.evaluation.episode import EpisodeLimits, EpisodeOutcome, run_episode
from robofollow_ros.evaluation.guard import DEFAULT_QUERY_TIMEOUT, GuardedPolicy, PolicyFailure
from robofollow_ros.evaluation.identity import RunIdentity, claim_run_folder
from robofollow_ros.evaluation.lock import RunLock
from robofollow_ros.evaluation.progress import Progress
from robofollow_ros.evaluation.recording import (
    EPISODES_DIR,
    RecordMode,
    clean_episodes,
    episode_stem,
    save_episode,
)
from robofollow_ros.evaluation.results import ResultsFile, TrialKey, trial_key
from robofollow_ros.evaluation.status import RUN_NAME, write_status
from robofollow_ros.policy.factory import PolicyFactory, resolve_policy
from robofollow_ros.referee.config import default_config
from robofollow_ros.referee.score import score_episode
from robofollow_ros.referee.trajectory import Trajectory

RESULTS_NAME = 'results.jsonl'
RUN_FILES = (RESULTS_NAME, RUN_NAME, EPISODES_DIR, 'report')


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
    variant: Variant = 'published'
    record: RecordMode = 'none'
    video: bool = False
    limits: EpisodeLimits = field(default_factory=EpisodeLimits)
    query_timeout: float = DEFAULT_QUERY_TIMEOUT
    force_new: bool = False


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


class RunInterrupted(KeyboardInterrupt):
    """The run was stopped by SIGINT (Ctrl-C) or SIGTERM; it stops cleanly and resumes later."""


class SignalStop:
    """Turns SIGINT and SIGTERM into ``RunInterrupted`` in the main thread, except inside ``shield()``.

    A signal that arrives while a trial's episode and record are being written is held until the record and
    ``run.json`` are complete, so that what is on disk always agrees.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.pending: str | None = None
        self._shielded = 0

    def _handle(self, number: int, frame: object) -> None:
        name = signal.Signals(number).name
        if self._shielded:
            self.pending = self.pending or name
            return
        raise RunInterrupted(name)

    @contextmanager
    def installed(self) -> Iterator[SignalStop]:
        """Install the handlers for the duration (only possible in the main thread; elsewhere a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {number: signal.signal(number, self._handle) for number in self.SIGNALS}
        try:
            yield self
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    @contextmanager
    def shield(self) -> Iterator[None]:
        """Hold signals until the block is done, then act on the first one that arrived."""
        self._shielded += 1
        try:
            yield
        finally:
            self._shielded -= 1
        if not self._shielded and self.pending:
            name, self.pending = self.pending, None
            raise RunInterrupted(name)


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


def run_identity(options: SuiteOptions, *, privileged: bool) -> RunIdentity:
    """The identity of the run ``options`` describe (see ``robofollow_ros.evaluation.identity``)."""
    return RunIdentity(
        policy=options.policy,
        policy_kwargs=dict(options.policy_kwargs),
        privileged=privileged,
        variant=str(options.variant),
        max_queries=options.limits.max_queries,
        actions_per_query=options.limits.actions_per_query,
        query_timeout=float(options.query_timeout),
        package_version=__version__,
        metric_version=default_config().metric_version,
    )


def check_options(options: SuiteOptions) -> None:
    """Refuse out-of-range options before anything runs.

    Raises:
        RoboFollowError: a limit below 1, a timeout not above 0, or an ``out`` that is a file.
    """
    if options.rounds < 1 or options.first_round < 1:
        raise RoboFollowError('--rounds and --first-round must be at least 1')
    if options.limits.max_queries < 1 or options.limits.actions_per_query < 1:
        raise RoboFollowError('--max-queries and the actions per query must be at least 1')
    if not options.query_timeout > 0:
        raise RoboFollowError('--query-timeout must be a positive number of seconds')
    if options.out.exists() and not options.out.is_dir():
        raise RunFolderError(f'--out {options.out} is a file, not a folder')


def make_out_folder(out: Path) -> None:
    """Create the run folder (and its parents).

    Raises:
        RunFolderError: it cannot be created.
    """
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RunFolderError(f'cannot create --out {out}: {error.strerror or error}') from error


def episode_meta(trial: Trial, *, variant: Variant) -> dict[str, Any]:
    """The episode description stored with a recorded episode."""
    return {
        'task_id': trial.task.task_id,
        'variant': variant,
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

    The in-process suite and the graph's referee node both score here, so live and in-process records agree.
    """
    try:
        result = score_episode(
            trial.task, trajectory, layout=layout, meta={'seed': trial.seed, 'round': trial.round}, variant=variant
        )
        record = {**result.to_record(), 'scored': True}
    except TrajectoryError as error:
        record = unscored_record(trial, reason=f'not scored: {error}', variant=variant)
        record['frames'] = len(trajectory)
    record['sim_seconds'] = float(trajectory.t[-1] - trajectory.t[0]) if len(trajectory) else 0.0
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
        'privileged': identity.privileged,
        'run_id': identity.digest,
        'policy_error': policy_error,
        'error_kind': error_kind,
    }


def build_failure_record(trial: Trial, failure: PolicyFailure, *, identity: RunIdentity) -> dict[str, Any]:
    """The record of a trial whose policy could not be built: unscored, with the failure."""
    record = unscored_record(trial, reason=f'not run: {failure}', variant=identity.variant)  # type: ignore[arg-type]
    record.update(bookkeeping(trial, identity=identity, policy_error=str(failure), error_kind=failure.kind))
    record.update({'queries': 0, 'executed_rows': 0, 'frames': 0, 'sim_seconds': 0.0, 'wall_seconds': 0.0})
    return record


class _PolicySlot:
    """Holds the current policy instance; builds a fresh one when there is none or it was abandoned."""

    def __init__(self, factory: PolicyFactory, *, timeout: float) -> None:
        self.factory = factory
        self.timeout = timeout
        self.policy: GuardedPolicy | None = None

    def get(self) -> GuardedPolicy:
        if self.policy is None or self.policy.abandoned:
            self.close()
            self.policy = GuardedPolicy(self.factory, timeout=self.timeout)
        return self.policy

    def close(self) -> str | None:
        policy, self.policy = self.policy, None
        return None if policy is None else policy.close()


def _run_trials(
    options: SuiteOptions,
    *,
    todo: Sequence[Trial],
    slot: _PolicySlot,
    identity: RunIdentity,
    results: ResultsFile,
    on_record: Callable[[dict[str, Any], float], None],
    stop: SignalStop,
) -> None:
    from robofollow_ros.sim.env import CellEnv

    with CellEnv(render=False) as cell:
        env: Any = cell
        if options.video:
            from robofollow_ros.data.capture import FrameCapture

            env = FrameCapture(cell)
        for trial in todo:
            layout = registry.layout_of(trial.task)
            try:
                policy = slot.get()
            except PolicyFailure as failure:
                outcome = None
                record = build_failure_record(trial, failure, identity=identity)
            else:
                outcome = run_episode(env, policy, trial.task, seed=trial.seed, layout=layout, limits=options.limits)
                record = make_record(trial, outcome, layout=layout, options=options, identity=identity)
            with stop.shield():
                if outcome is not None and options.record != 'none':
                    record['episode_file'] = save_episode(
                        options.out,
                        mode=options.record,
                        stem=episode_stem(trial.task.task_id, trial.round),
                        meta=episode_meta(trial, variant=options.variant),
                        trajectory=outcome.trajectory,
                        record=record,
                    )
                if outcome is not None and options.video:
                    from robofollow_ros.data.video import save_trial_video

                    stem = episode_stem(trial.task.task_id, trial.round)
                    record['video_file'] = save_trial_video(options.out, stem, env.frames().images, record=record)
                results.append(record)
                on_record(record, 0.0 if outcome is None else outcome.wall_seconds)


class TrialRunner(Protocol):
    """Runs the trials of a suite somewhere else than in this process (the ROS graph's evaluator).

    Called like ``_run_trials``: run ``todo`` in order; for each trial, inside ``stop.shield()``, append its
    record to ``results`` and call ``on_record(record, wall_seconds)``.
    """

    runtime: str

    def __call__(
        self,
        options: SuiteOptions,
        *,
        todo: Sequence[Trial],
        slot: Any,
        identity: RunIdentity,
        results: ResultsFile,
        on_record: Callable[[dict[str, Any], float], None],
        stop: SignalStop,
    ) -> None:
        """Run the trials."""


def run_suite(
    options: SuiteOptions, *, progress: bool = True, runner: TrialRunner | None = None
) -> list[dict[str, Any]]:
    """Run every trial not yet in ``out/results.jsonl``; returns all records of the suite.

    The folder is locked for the run (``RunLock``) and must hold this run's identity or none
    (``claim_run_folder``; ``options.force_new`` sets another run aside). ``run.json`` is rewritten after every
    trial and says ``interrupted`` or ``failed``, with the reason, if the run stops early. ``runner`` runs the
    trials elsewhere (the ROS graph); planning, resuming, results, progress and ``run.json`` stay the same.

    Raises:
        RoboFollowError: bad options, unknown policy, or a folder that is busy or holds another run.
        KeyboardInterrupt: Ctrl-C or SIGTERM (``RunInterrupted``); everything written so far is kept.
    """
    check_options(options)
    factory = resolve_policy(options.policy, kwargs=options.policy_kwargs)
    identity = run_identity(options, privileged=factory.privileged)
    if runner is not None:
        identity = replace(identity, runtime=runner.runtime)
    trials = plan_trials(options)
    wanted = {trial.key for trial in trials}
    make_out_folder(options.out)
    with RunLock(options.out):
        results = ResultsFile(options.out / RESULTS_NAME)
        moved = claim_run_folder(
            options.out,
            identity,
            record_ids=(record.get('run_id') for record in results.records),
            run_files=RUN_FILES,
            force_new=options.force_new,
        )
        if moved is not None:
            print(f'--force-new: the previous run in {options.out} was moved to {moved}', file=sys.stderr)
            results = ResultsFile(options.out / RESULTS_NAME)
        clean_episodes(options.out, referenced=(str(r['episode_file']) for r in results.records if 'episode_file' in r))
        done = results.done()
        todo = [trial for trial in trials if trial.key not in done]
        option_values = {**asdict(options), 'out': str(options.out)}

        def suite_records() -> list[dict[str, Any]]:
            return [record for record in results.records if trial_key(record) in wanted]

        def status(state: Any, reason: str | None = None) -> None:
            write_status(
                options.out,
                identity=identity,
                options=option_values,
                status=state,
                expected=len(trials),
                records=suite_records(),
                reason=reason,
            )

        display = Progress(len(trials), already_done=len(trials) - len(todo)) if progress else None

        def on_record(record: dict[str, Any], wall: float) -> None:
            status('running')
            if display is not None:
                display.update(record, wall_seconds=wall)

        slot = _PolicySlot(factory, timeout=options.query_timeout)
        try:
            with SignalStop().installed() as stop:
                status('running')
                run = _run_trials if runner is None else runner
                run(options, todo=todo, slot=slot, identity=identity, results=results, on_record=on_record, stop=stop)
        except KeyboardInterrupt as interrupt:
            status('interrupted', reason=str(interrupt) or 'SIGINT')
            raise
        except BaseException as error:
            status('failed', reason=f'{type(error).__name__}: {error}')
            raise
        finally:
            problem = slot.close()
            if problem:
                print(f'warning: {problem}', file=sys.stderr)
        status('complete')
        return suite_records()
