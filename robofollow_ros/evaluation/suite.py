"""An evaluation suite: plan the trials, run and score each (here, in worker processes or on Ray), write, resume.

However many simulators run the trials, this process is the one writer: it appends each finished trial's
record to the results file (after publishing its episode), rewrites ``run.json`` and resumes a stopped run.
"""

from __future__ import annotations

import math
import signal
import sys
import threading
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, replace
from typing import Any, Protocol

from robofollow_ros import __version__
from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.types import Task
from robofollow_ros.errors import RoboFollowError, RunFolderError
from robofollow_ros.evaluation.digests import DIGESTS_NAME, RunDigests, check_unchanged
from robofollow_ros.evaluation.dispatch import run_pool
from robofollow_ros.evaluation.endpoints import ServerWatch
from robofollow_ros.evaluation.episode_files import EPISODES_DIR, LAYOUTS_DIR, episode_stem, save_episode
from robofollow_ros.evaluation.identity import RunIdentity, claim_run_folder
from robofollow_ros.evaluation.leftovers import clean_run_leftovers
from robofollow_ros.evaluation.lock import RunLock, make_out_folder
from robofollow_ros.evaluation.options import SuiteOptions
from robofollow_ros.evaluation.progress import Progress
from robofollow_ros.evaluation.records import Trial, episode_meta
from robofollow_ros.evaluation.results import RESULTS_NAME, ResultsFile, trial_key
from robofollow_ros.evaluation.retry import set_aside_failed_trials
from robofollow_ros.evaluation.runner import InProcessTrials, TrialResult
from robofollow_ros.evaluation.status import RUN_NAME, write_status
from robofollow_ros.interrupts import interrupt_behind
from robofollow_ros.policy.factory import resolve_policy
from robofollow_ros.policy.isolation.sandbox import check_sandbox_options
from robofollow_ros.referee.aggregate import is_void
from robofollow_ros.referee.config import default_config

__all__ = ['RunInterrupted', 'SuiteOptions', 'Trial', 'plan_trials', 'run_suite']

RUN_FILES = (RESULTS_NAME, RUN_NAME, DIGESTS_NAME, EPISODES_DIR, LAYOUTS_DIR, 'report')


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


def run_identity(options: SuiteOptions, *, privileged: bool, isolation: str = 'built-in') -> RunIdentity:
    """The identity of the run ``options`` describe (see ``robofollow_ros.evaluation.identity``)."""
    return RunIdentity(
        policy=options.policy,
        policy_kwargs=dict(options.policy_kwargs),
        privileged=privileged,
        isolation=isolation,
        variant=str(options.variant),
        max_queries=options.limits.max_queries,
        actions_per_query=options.limits.actions_per_query,
        query_timeout=float(options.query_timeout),
        package_version=__version__,
        metric_version=default_config().metric_version,
        robot=options.robot,
        policy_network=options.policy_network if isolation == 'sandbox' else None,
    )


def check_options(options: SuiteOptions) -> None:
    """Refuse out-of-range options before anything runs.

    Raises:
        RoboFollowError: a limit below 1, a timeout not above 0 (Ray's start-up timeout: below 0), malformed pool
            endpoints, or an ``out`` that is a file; a policy scratch folder that is missing or shares files with
            ``out``; a policy network address that is not ``host:port``.
    """
    if options.rounds < 1 or options.first_round < 1:
        raise RoboFollowError('--rounds and --first-round must be at least 1')
    if options.limits.max_queries < 1 or options.limits.actions_per_query < 1:
        raise RoboFollowError('--max-queries and the actions per query must be at least 1')
    if options.workers < (0 if options.use_ray else 1):
        raise RoboFollowError('--workers must be at least 1')
    run_pool(options)
    if not options.query_timeout > 0:
        raise RoboFollowError('--query-timeout must be a positive number of seconds')
    if options.policy_memory_limit < 0:
        raise RoboFollowError('--policy-memory-limit must be a number of MiB, or 0 for no limit')
    if not 0 <= options.ray_start_timeout < math.inf:
        raise RoboFollowError('--ray-start-timeout must be a number of seconds (0 or more)')
    if options.out.exists() and not options.out.is_dir():
        raise RunFolderError(f'--out {options.out} is a file, not a folder')
    check_sandbox_options(options.sandbox())


class TrialExecutor(Protocol):
    """Runs trials somewhere and hands their results back, each once, as they finish."""

    problems: list[str]

    def results(self, todo: Sequence[Trial]) -> Generator[TrialResult, None, None]:
        """The result of every trial in ``todo`` (in any order); stops its simulators when closed."""
        ...


class ExecutorFactory(Protocol):
    """Builds the executor of a run elsewhere than the built-in ways (the ROS graph); names that runtime and, on a
    real cell, its robot profile and pose source (``identity_fields``: ``RunIdentity`` fields)."""

    runtime: str
    identity_fields: Mapping[str, str]

    def __call__(self, options: SuiteOptions, *, identity: RunIdentity) -> TrialExecutor:
        """The executor for this run."""
        ...


def make_executor(options: SuiteOptions, *, identity: RunIdentity) -> TrialExecutor:
    """This process, local worker processes, or Ray actors, as ``options`` ask."""
    if options.use_ray:
        from robofollow_ros.evaluation.ray_workers import RayTrials

        return RayTrials(options, identity=identity)
    if options.workers > 1:
        from robofollow_ros.evaluation.workers import LocalWorkers

        return LocalWorkers(options, identity=identity)
    return InProcessTrials(options, identity=identity)


def write_result(
    options: SuiteOptions, result: TrialResult, *, trial: Trial, results: ResultsFile, digests: RunDigests
) -> None:
    """Publish the trial's episode and video (when asked), append its record, then digest what was written: the
    single writer's step."""
    record = result.record
    stem = episode_stem(trial.task.task_id, trial.round)
    if options.record != 'none' and result.trajectory is not None:
        record['episode_file'] = save_episode(
            options.out,
            mode=options.record,
            stem=stem,
            meta=episode_meta(trial, variant=options.variant, robot=options.robot),
            trajectory=result.trajectory,
            record=record,
            layout=registry.layout_of(trial.task),
        )
    if options.video and result.video_frames is not None:
        from robofollow_ros.evaluation.video import save_trial_video

        record['video_file'] = save_trial_video(options.out, stem, result.video_frames, record=record)
    results.append(record)
    written = [record.get('episode_file'), record.get('video_file')]
    digests.update([RESULTS_NAME, *(str(path) for path in written if path)])


def run_suite(
    options: SuiteOptions, *, progress: bool = True, executor: ExecutorFactory | None = None
) -> list[dict[str, Any]]:
    """Run every trial not yet in ``out/results.jsonl``; returns all records of the suite.

    The folder is locked for the run (``RunLock``) and must hold this run's identity or none
    (``claim_run_folder``; ``options.force_new`` sets another run aside). ``run.json`` is rewritten after every
    trial and says ``interrupted`` or ``failed``, with the reason, if the run stops early. ``executor`` runs the
    trials elsewhere (the ROS graph's evaluator): planning, resuming, writing, progress and ``run.json`` stay the
    same, and the run identity names its ``runtime``.

    Raises:
        RoboFollowError: bad options, unknown policy, or a folder that is busy or holds another run.
        KeyboardInterrupt: Ctrl-C or SIGTERM (``RunInterrupted``); everything written so far is kept.
    """
    check_options(options)
    factory = resolve_policy(
        options.policy, kwargs=options.policy_kwargs, trusted=options.trusted_policy, python=options.policy_python
    )
    identity = run_identity(options, privileged=factory.privileged, isolation=factory.isolation)
    if executor is not None:
        cell = executor.identity_fields
        identity = replace(
            identity,
            runtime=executor.runtime,
            robot_profile=cell.get('robot_profile'),
            pose_source=cell.get('pose_source'),
        )
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
        digests = RunDigests(options.out)
        # run.json holds no result (the resume rewrites it from the records), and a run killed between rewriting it
        # and its digest left one that differs: the records, episodes and videos are what a resume must refuse on.
        for problem in digests.changed([RUN_NAME]):
            print(f'warning: {problem} since its digest (a run stopped while writing it): rewritten', file=sys.stderr)
        for note in check_unchanged(
            options.out,
            names=[name for name in digests.entries if name != RUN_NAME],
            what=f'cannot resume the run in {options.out}',
            advice='restore them or use --force-new',
        ):
            print(f'warning: {note}', file=sys.stderr)
        if options.retry_errors:
            count, aside = set_aside_failed_trials(options.out, results, wanted=wanted)
            if aside is not None:
                print(
                    f'--retry-errors: {count} trials with a policy error run again (first records in {aside})',
                    file=sys.stderr,
                )
        clean_run_leftovers(
            options.out,
            stems=[episode_stem(trial.task.task_id, trial.round) for trial in trials],
            referenced=(str(r['episode_file']) for r in results.records if 'episode_file' in r),
        )
        digests.forget(name for name in list(digests.entries) if not (options.out / name).exists())
        digests.update([RESULTS_NAME] if (options.out / RESULTS_NAME).exists() else [])
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
            digests.update([RUN_NAME])

        display = Progress(len(trials), already_done=len(trials) - len(todo)) if progress else None

        def on_record(record: dict[str, Any], wall: float) -> None:
            status('running')
            if display is not None:
                display.update(record, wall_seconds=wall)

        watch = ServerWatch.for_run(options.policy, options.policy_kwargs)
        trials_executor = (executor or make_executor)(options, identity=identity)
        by_key = {trial.key: trial for trial in todo}
        try:
            with SignalStop().installed() as stop:
                status('running')
                stream = trials_executor.results(todo)
                written = 0
                try:
                    for result in stream:
                        with stop.shield():
                            write_result(options, result, trial=by_key[result.key], results=results, digests=digests)
                            if is_void(result.record):
                                continue  # kept in the file; the executor plays the trial again
                            on_record(result.record, float(result.record.get('wall_seconds', 0.0)))
                        written += 1
                        if watch is not None:
                            watch.observe(result.record, remaining=len(todo) - written)
                finally:
                    stream.close()
        except BaseException as error:
            interrupt = interrupt_behind(error)  # also a Ctrl-C that an interrupted import turned into ImportError
            if interrupt is not None:
                status('interrupted', reason=str(interrupt) or 'SIGINT')
            else:
                status('failed', reason=f'{type(error).__name__}: {error}')
            raise
        finally:
            for problem in trials_executor.problems:
                print(f'warning: {problem}', file=sys.stderr)
        status('complete')
        return suite_records()
