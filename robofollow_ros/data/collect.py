"""``run_collection``: expert demonstrations of training labels, kept only when the referee scores them complete.

For each label, attempts walk the training seeds upward (``data.seeds``); an attempt draws one of the label's
paraphrases, runs the privileged expert in the cell with every frame captured, and is scored by the referee.
Complete episodes are written (raw HDF5 always; video and rosbag2 on request), the others are counted with the
referee's reason. Every attempt ends with one ledger line, so a killed collection resumes without losing or
repeating a demonstration.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any

from robofollow_ros.benchmark import registry
from robofollow_ros.benchmark.constants import MAX_QUERIES
from robofollow_ros.benchmark.types import Task
from robofollow_ros.data.background import OrderedWrites
from robofollow_ros.data.manifest import collection_identity, open_manifest
from robofollow_ros.data.progress import CollectProgress
from robofollow_ros.data.raw_hdf5 import write_raw_episode
from robofollow_ros.data.seeds import draw_paraphrase, training_seed
from robofollow_ros.data.store import Ledger, accepted, episode_paths, label_dir, open_ledger, write_json
from robofollow_ros.errors import DatasetError, TrajectoryError
from robofollow_ros.evaluation.episode import EpisodeLimits, run_episode
from robofollow_ros.evaluation.lock import RunLock, make_out_folder
from robofollow_ros.evaluation.options import DEFAULT_RAY_START_TIMEOUT
from robofollow_ros.referee.score import score_episode
from robofollow_ros.robot.specs import DEFAULT_ROBOT
from robofollow_ros.sim.capture import CapturedFrames, FrameCapture
from robofollow_ros.sim.constants import IMAGE_HEIGHT, IMAGE_WIDTH, ROW_FPS

EPISODE_FORMATS = ('hdf5', 'bag')


@dataclass(frozen=True)
class CollectOptions:
    """What to collect and where.

    Attributes:
        out: collection folder.
        labels: training label ids, in collection order.
        episodes: accepted demonstrations wanted per label.
        bag: also write a rosbag2 per demonstration.
        video: also write a browser-playable MP4 per demonstration.
        cameras: record the three cameras (off only to measure or check the expert quickly: such demonstrations
            hold states and actions alone and cannot be exported to LeRobot or video).
        width, height: camera image size.
        max_attempts: attempts per label before giving up on it (the published collector's seed budget).
        max_queries: expert queries per episode (the protocol's evaluation budget).
        robot: the simulated cell's robot (``robot.specs``).
    """

    out: Path
    labels: Sequence[str]
    episodes: int = 50
    bag: bool = False
    video: bool = False
    cameras: bool = True
    width: int = IMAGE_WIDTH
    height: int = IMAGE_HEIGHT
    max_attempts: int = 5000
    max_queries: int = MAX_QUERIES
    robot: str = DEFAULT_ROBOT

    def identity(self) -> dict[str, Any]:
        """The options a resumed collection must share (all but the folder)."""
        values = asdict(self)
        values.pop('out')
        values['labels'] = list(self.labels)
        return values


@dataclass
class LabelTally:
    """Attempts and acceptances of one label (including earlier runs of a resumed collection)."""

    label: str
    attempts: int = 0
    accepted: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    @property
    def acceptance(self) -> float:
        """Accepted / attempted (0 when nothing was attempted)."""
        return self.accepted / self.attempts if self.attempts else 0.0


def resolve_labels(*, scenes: Sequence[int] | None = None, pattern: str | None = None) -> list[str]:
    """Training label ids for the given scenes and id pattern, in protocol order.

    Raises:
        DatasetError: nothing matches.
    """
    wanted: Sequence[int | None] = scenes or [None]
    labels = [task.task_id for scene in wanted for task in registry.training_labels(scene=scene, pattern=pattern)]
    if not labels:
        raise DatasetError('no training label matches the given scene and labels')
    return labels


def row_fps() -> Fraction:
    """Frames per second of demonstrations: 50/3 (16.67), one frame every ``ROW_SECONDS`` (``sim.capture``)."""
    return ROW_FPS


def _rejection_reason(record: dict[str, Any]) -> str:
    if record.get('policy_error'):
        return 'expert failed'
    for stage in record.get('stages', []):
        if stage['exec'] < stage['max'] - 1e-9:
            return f'{stage["name"]} not executed'
    return 'not complete'


def score_attempt(task: Task, trajectory: Any, *, seed: int, policy_error: str | None) -> dict[str, Any]:
    """The referee's record of one attempt (an unscorable episode is a rejected one)."""
    layout = registry.layout_of(task)
    try:
        record = score_episode(task, trajectory, layout=layout, meta={'seed': seed, 'round': 0}).to_record()
    except TrajectoryError as error:
        record = {'task_id': task.task_id, 'completion_ok': False, 'stages': [], 'exec_msg': str(error)}
    record['policy_error'] = policy_error
    return record


def _write_episode(
    options: CollectOptions, task: Task, index: int, frames: CapturedFrames, outcome: Any, record: dict[str, Any]
) -> None:
    paths = episode_paths(options.out, task, index)
    meta = {
        'task_id': task.task_id,
        'label': task.task_id,
        'scene': task.scene,
        'layout': task.layout,
        'seed': int(record['seed']),
        'episode': index,
        'instruction': task.instruction,
        'arm': task.arm,
        'level': 'train',
        'robot': options.robot,
    }
    if options.video:
        from robofollow_ros.evaluation.video import write_episode_video

        write_episode_video(paths.video, frames.images, fps=row_fps(), instruction=task.instruction, record=record)
    if options.bag:
        from robofollow_ros.bags import write_episode_bag

        if paths.bag.exists():
            shutil.rmtree(paths.bag)
        write_episode_bag(
            paths.bag,
            meta=meta,
            trajectory=outcome.trajectory,
            joint_positions=frames.states,
            images={name: list(stack) for name, stack in frames.images.items()},
            result=record,
            layout=registry.layout_of(task),
        )
    write_json(paths.instruction, {'seen': [task.instruction], 'unseen': []})
    attrs = {
        'robofollow_scene': f'scene{task.scene}',
        'task': task.task_id,
        'seed': int(record['seed']),
        'episode': index,
        'instruction': task.instruction,
        'layout': task.layout,
        'fps': float(row_fps()),
    }
    write_raw_episode(paths.hdf5, frames, attrs=attrs)


def _finish_label(options: CollectOptions, task: Task, ledger: Ledger, tally: LabelTally) -> None:
    kept = accepted(ledger.records, task.task_id)
    folder = label_dir(options.out, task)
    write_json(folder / 'seeds.json', [int(record['seed']) for record in kept])
    if len(kept) >= options.episodes:
        write_json(folder / 'complete.json', {'episodes': len(kept), 'attempts': tally.attempts})


def _record_attempt(
    options: CollectOptions, task: Task, ledger: Ledger, entry: dict[str, Any], tally: LabelTally
) -> None:
    ledger.append(entry)
    if entry['accepted']:
        _finish_label(options, task, ledger, tally)


def _tallies(options: CollectOptions, records: list[dict[str, Any]]) -> dict[str, LabelTally]:
    tallies = {label: LabelTally(label) for label in options.labels}
    for record in records:
        tally = tallies.get(record['task_id'])
        if tally is None:
            continue
        tally.attempts += 1
        if record.get('accepted'):
            tally.accepted += 1
        else:
            reason = str(record.get('reason', 'not complete'))
            tally.reasons[reason] = tally.reasons.get(reason, 0) + 1
    return tallies


def apply_entry(tally: LabelTally, entry: dict[str, Any]) -> None:
    """Count one attempt's ledger entry in its label's tally."""
    tally.attempts += 1
    if entry['accepted']:
        tally.accepted += 1
    else:
        reason = str(entry.get('reason', 'not complete'))
        tally.reasons[reason] = tally.reasons.get(reason, 0) + 1


Report = Callable[[dict[str, Any], float], None]
"""Called with an attempt's ledger entry (once its files are complete) and the attempt's wall seconds."""


class LabelCollector:
    """One process's simulator, guarded expert and episode writer; collects a label at a time.

    A label's attempts walk its training seeds in order from where its ledger stopped, so what a label holds
    depends on the seeds only, not on which process collected it or what it collected before.

    Args:
        options: the collection.
        background_writes: write an accepted episode's files on a second thread while the next attempt runs.
    """

    def __init__(self, options: CollectOptions, *, background_writes: bool = True) -> None:
        from robofollow_ros.evaluation.guard import GuardedPolicy
        from robofollow_ros.policy.factory import resolve_policy
        from robofollow_ros.sim.env import CellEnv

        self.options = options
        self.env = CellEnv(render=options.cameras, width=options.width, height=options.height, robot=options.robot)
        self.capture = FrameCapture(self.env, images=options.cameras)
        self.policy = GuardedPolicy(resolve_policy('expert'))
        self.limits = EpisodeLimits(max_queries=options.max_queries)
        self.writes = OrderedWrites(background=background_writes)

    def collect(self, label: str, *, attempts: int, accepted: int, report: Report, most: int | None = None) -> None:
        """Attempt ``label`` from its attempt number ``attempts`` (``accepted`` kept so far) until it has
        ``episodes`` demonstrations or its attempt budget is spent (or ``most`` attempts were made in this call);
        ``report`` each attempt once its files are complete (on this thread, in order). Returns once every file is
        written."""
        options = self.options
        label_task = registry.get_task(label)
        layout = registry.layout_of(label_task)
        last = options.max_attempts if most is None else min(options.max_attempts, attempts + most)
        while accepted < options.episodes and attempts < last:
            seed = training_seed(attempts)
            task = replace(label_task, instruction=draw_paraphrase(label_task, seed=seed))
            started = time.perf_counter()
            outcome = run_episode(self.capture, self.policy, task, seed=seed, layout=layout, limits=self.limits)
            record = score_attempt(task, outcome.trajectory, seed=seed, policy_error=outcome.policy_error)
            ok = bool(record.get('completion_ok'))
            entry: dict[str, Any] = {
                'task_id': label,
                'round': attempts,
                'seed': seed,
                'accepted': ok,
                'instruction': task.instruction,
                'frames': len(outcome.trajectory),
                'intent_score': record.get('intent_score', 0.0),
                'exec_score': record.get('exec_score', 0.0),
            }
            write = None
            if ok:
                entry['episode'] = accepted
                write = partial(_write_episode, options, task, accepted, self.capture.frames(), outcome, record)
            else:
                entry['reason'] = _rejection_reason(record)
            attempts += 1
            accepted += ok
            wall = time.perf_counter() - started
            # The ledger line (and the label's seed list) only once the episode's files are complete.
            self.writes.submit(write, then=partial(report, entry, wall))
        self.writes.finish()

    def close(self) -> None:
        """Finish the writes in flight (best effort) and release the simulator and the expert."""
        with contextlib.suppress(Exception):
            self.writes.finish()
        self.writes.close()
        self.policy.close()
        self.env.close()


def check_collection(options: CollectOptions) -> None:
    """Refuse options no collection can run with.

    Raises:
        DatasetError: budgets below 1, videos without cameras, or an evaluation task among the labels.
    """
    if options.episodes < 1 or options.max_attempts < 1:
        raise DatasetError('--episodes and --max-attempts must be at least 1')
    if options.video and not options.cameras:
        raise DatasetError('videos need the cameras')
    for label in options.labels:
        if registry.get_task(label).split != 'train':
            raise DatasetError(
                f'{label} is an evaluation task; collect training labels (robofollow tasks --split train)'
            )


def run_collection(
    options: CollectOptions,
    *,
    progress: bool = True,
    background_writes: bool = True,
    workers: int = 1,
    ray: RaySettings | None = None,
) -> dict[str, LabelTally]:
    """Collect until every label has ``options.episodes`` accepted demonstrations (or its attempt budget is spent).

    With ``background_writes`` (the default) an accepted episode's files are encoded and written on a second
    thread while the next attempt runs (``data.background``); False writes them before the next attempt starts.
    ``workers`` > 1 collects that many labels at once in worker processes (``data.collect_workers``); the
    demonstrations are the same files whatever the number (the seeds decide), and it is not part of the
    collection's identity. With ``ray`` the labels are collected on Ray actors (``data.collect_ray``; ``workers``
    of them, or one per CPU of the cluster when 0), the files sent back here: the same files again.

    Returns:
        Per label, the attempts and acceptances so far (this run and earlier ones).

    Raises:
        DatasetError: the folder holds a collection with other options, or a ledger or manifest that is not one.
        RunFolderError: another process collects into (or evaluates in) the folder, or it cannot be written.
    """
    check_collection(options)
    if workers < (0 if ray is not None else 1):
        raise DatasetError(f'--workers must be at least 1, got {workers}')
    make_out_folder(options.out)
    with RunLock(options.out):
        open_manifest(options.out, collection_identity(options.identity()))
        ledger = open_ledger(options.out)
        tallies = _tallies(options, ledger.records)
        wanted = options.episodes * len(options.labels)
        already = sum(min(tally.accepted, options.episodes) for tally in tallies.values())
        display = CollectProgress(wanted, already=already) if progress else None
        book = CollectionBook(options, ledger, tallies, display)
        for label in set(options.labels) - set(book.unfinished()):
            # A kill between an attempt's ledger line and its seed list leaves the list one short: written again.
            book.label_done(label)
        if ray is not None:
            from robofollow_ros.data.collect_ray import collect_on_ray

            collect_on_ray(options, book, address=ray.address, workers=workers, start_timeout=ray.start_timeout)
            return tallies
        if workers > 1:
            from robofollow_ros.data.collect_workers import collect_with_workers

            collect_with_workers(options, book, workers=workers)
            return tallies
        collector = LabelCollector(options, background_writes=background_writes)
        try:
            for label in options.labels:
                tally = tallies[label]
                collector.collect(
                    label, attempts=tally.attempts, accepted=tally.accepted, report=partial(book.record, label)
                )
                book.label_done(label)
        finally:
            collector.close()
    return tallies


@dataclass(frozen=True)
class RaySettings:
    """Where ``run_collection`` runs its labels on Ray: the cluster's ``address`` (``None``: an instance started
    for the collection on this machine, bound to loopback) and how long Ray may take to start or be joined."""

    address: str | None = None
    start_timeout: float = DEFAULT_RAY_START_TIMEOUT


class CollectionBook:
    """What the collecting process keeps: the ledger, the labels' seed lists and completion marks, the tallies
    and the progress display (one writer, whichever process simulated)."""

    def __init__(
        self,
        options: CollectOptions,
        ledger: Ledger,
        tallies: dict[str, LabelTally],
        display: CollectProgress | None,
    ) -> None:
        self.options = options
        self.ledger = ledger
        self.tallies = tallies
        self.display = display

    def record(self, label: str, entry: dict[str, Any], wall_seconds: float) -> None:
        """One attempt of ``label`` whose files are complete: its ledger line, tally and progress line."""
        tally = self.tallies[label]
        apply_entry(tally, entry)
        _record_attempt(self.options, registry.get_task(label), self.ledger, entry, tally)
        if self.display is not None:
            self.display.update(
                label,
                seed=int(entry['seed']),
                ok=bool(entry['accepted']),
                reason=str(entry.get('reason', '')),
                wall_seconds=wall_seconds,
            )

    def label_done(self, label: str) -> None:
        """``label``'s attempts are over: its seed list and, when it has its episodes, its completion mark."""
        _finish_label(self.options, registry.get_task(label), self.ledger, self.tallies[label])

    def unfinished(self) -> list[str]:
        """The labels, in order, that still want demonstrations and have attempts left."""
        options = self.options
        return [
            label
            for label in options.labels
            if self.tallies[label].accepted < options.episodes and self.tallies[label].attempts < options.max_attempts
        ]
