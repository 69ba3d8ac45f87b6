"""End to end over fake hardware with markers: the 16 demo tasks scored from tracked poses against simulation truth.

For each policy (the expert and the blind baseline) the real-time graph runs the demo tasks (``cli.demo.
demo_task_ids``: one per scene x level, round 1, so the same trial seeds) over fake hardware with the ArUco tags
drawn, once with ``pose_source:=tracker`` (the ``aruco_tracker`` node's poses go to the policy and to the live
referee) and once with ``pose_source:=sim`` (fake hardware's simulation truth). Two comparisons per task:

* **the same episode** (``tracker`` against ``truth``): the tracked run's bag scored again from the simulation
  truth fake hardware recorded beside the tracked poses (``/robofollow/truth/objects``). Only the referee's object
  poses differ, so this is the fair test of the referee on tracked poses;
* **the tracker run against the truth run** (``tracker`` against ``sim``): what a user sees, the policy acting on
  tracked poses too; real-time episodes are not repeatable (time runs on), so ``--sim-repeats 2`` runs the truth
  pass twice to measure how much two truth runs differ by on their own.

Prints per task the completion and Intent (IS) of each, the stages whose intent or exec differ, and the counts.

    MUJOCO_GL=egl ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST .venv/bin/python bench/bench_tracker_e2e.py \\
        --out /tmp/tracker_e2e --domain 142 [--policies expert,blind] [--sim-repeats 2] [--calibration FILE]

Each pass is one ``robofollow launch real`` (``record:=bag``: the bags under ``OUT/<policy>/<pass>/episodes`` show
every difference). A launch that fails is started again on the same folder (it plays only what is missing), at most
``--attempts`` times.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from graph_launch import ROOT, graph_env, launch_command

from robofollow_ros.cli.demo import demo_task_ids


def run_pass(
    *, policy: str, source: str, out: Path, domain: int, tasks: list[str], calibration: str, attempts: int
) -> tuple[float, int]:
    """One launch of the real graph (again on failure); its wall time and the number of launches it took."""
    calibrated = {'calibration': calibration} if source == 'tracker' and calibration else {}
    command = launch_command(
        'real',
        pose_source=source,
        markers='true',
        policy=policy,
        task_ids=','.join(tasks),
        record='bag',
        out=str(out),
        progress='true',
        **calibrated,
    )
    env = graph_env(domain)
    start = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, attempts + 1):
        with (out.parent / f'{out.name}.launch{attempt}.log').open('w') as log:
            done = subprocess.run(command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=False)
        if done.returncode == 0 and len(records(out)) == len(tasks):
            return time.monotonic() - start, attempt
        print(f'   {policy} {source}: launch {attempt} exited with {done.returncode}; see {log.name}', flush=True)
    return time.monotonic() - start, attempts


def records(out: Path) -> dict[str, dict[str, Any]]:
    """The run's records by task (not void; the last one of a task wins)."""
    path = out / 'results.jsonl'
    if not path.exists():
        return {}
    found: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            if not record.get('void'):
                found[record['task_id']] = record
    return found


def rescored_from_truth(out: Path, found: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each tracked episode's bag scored again from the simulation truth fake hardware recorded beside the tracker
    (``/robofollow/truth/objects/<name>/pose``): the same episode, only the referee's object poses differ."""
    from robofollow_ros import topics
    from robofollow_ros.cli.score import score_path

    rescored = {}
    for task, record in found.items():
        if record.get('episode_file'):
            try:
                rescored[task] = score_path(out / record['episode_file'], object_poses=topics.TRUTH_POSE_PREFIX)
            except Exception as error:  # a bag without truth (older code) is reported, not fatal
                print(f'   {task}: not re-scored: {error}', flush=True)
    return rescored


def stages(record: dict[str, Any]) -> list[tuple[str, float, float]]:
    return [(stage['name'], stage['intent'], stage['exec']) for stage in record.get('stages', [])]


def verdict(record: dict[str, Any] | None) -> str:
    if record is None:
        return 'missing'
    if record.get('policy_error'):
        return f'error ({record.get("error_kind")})'
    return f'{"ok" if record["completion_ok"] else "no"} IS {record["intent_score"]:.2f}'


def same(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Completion and Intent agree (the issue's criterion)."""
    return (
        a is not None
        and b is not None
        and not a.get('policy_error')
        and not b.get('policy_error')
        and (a['completion_ok'], a['intent_score']) == (b['completion_ok'], b['intent_score'])
    )


def stage_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Stages whose intent or exec differ (name: first pass -> second pass)."""
    left, right = stages(a), stages(b)
    lines = []
    for index in range(max(len(left), len(right))):
        x = left[index] if index < len(left) else None
        y = right[index] if index < len(right) else None
        if x != y:
            name = (x or y)[0]  # type: ignore[index]
            lines.append(
                f'{name}: IS/ES {x[1]:.2f}/{x[2]:.2f} -> {y[1]:.2f}/{y[2]:.2f}'
                if x and y
                else f'{name}: only in {"the first" if x else "the second"}'
            )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--out', type=Path, default=Path('/tmp/bench_tracker_e2e'))
    parser.add_argument('--domain', type=int, default=int(os.environ.get('ROS_DOMAIN_ID', '0') or 0))
    parser.add_argument('--policies', default='expert,blind')
    parser.add_argument('--tasks', default='', help='task ids, comma-separated (default: the 16 demo tasks)')
    parser.add_argument('--sim-repeats', type=int, default=1, help='truth passes per policy (2: the run-to-run noise)')
    parser.add_argument('--calibration', default='', help='a frozen camera calibration for the tracker')
    parser.add_argument('--attempts', type=int, default=3)
    args = parser.parse_args()
    tasks = [t for t in args.tasks.split(',') if t] or demo_task_ids()
    passes = ['tracker'] + [f'sim{n}' if n > 1 else 'sim' for n in range(1, args.sim_repeats + 1)]
    agree_total: dict[str, tuple[int, int]] = {}
    for policy in args.policies.split(','):
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for name in passes:
            source = 'tracker' if name == 'tracker' else 'sim'
            out = args.out / policy / name
            print(f'== {policy}, pose_source:={source} ({name}): {len(tasks)} tasks -> {out}', flush=True)
            wall, launches = run_pass(
                policy=policy,
                source=source,
                out=out,
                domain=args.domain,
                tasks=tasks,
                calibration=args.calibration,
                attempts=args.attempts,
            )
            found[name] = records(out)
            print(f'   {len(found[name])} records in {wall:.0f} s ({launches} launch(es))', flush=True)
            if name == 'tracker':
                found['truth'] = rescored_from_truth(out, found[name])
        print(f'\n### {policy}\n')
        columns = ['tracker', 'truth', *passes[1:]]
        print('| task | ' + ' | '.join(columns) + ' | tracker = truth (same episode) | tracker = sim (run) |')
        print('|---|' + '---|' * len(columns) + '---|---|')
        agree = same_episode = 0
        notes: list[str] = []
        for task in tasks:
            row = [verdict(found[name].get(task)) for name in columns]
            ok = same(found['tracker'].get(task), found['sim'].get(task))
            referee = same(found['tracker'].get(task), found['truth'].get(task))
            agree += ok
            same_episode += referee
            print(f'| {task} | ' + ' | '.join(row) + f' | {"yes" if referee else "NO"} | {"yes" if ok else "NO"} |')
            for other in ['truth', *passes[1:]]:
                a, b = found['tracker'].get(task), found[other].get(task)
                if a and b:
                    for line in stage_differences(a, b):
                        notes.append(f'{task}: tracker vs {other}: {line}')
            if len(passes) > 2:
                a, b = found['sim'].get(task), found['sim2'].get(task)
                if a and b:
                    for line in stage_differences(a, b):
                        notes.append(f'{task}: sim vs sim2: {line}')
        print(f'\n{policy}: the same episode scored from tracked poses and from truth: {same_episode} of {len(tasks)}')
        print(f'{policy}: the tracker run and the truth run: the same completion and Intent on {agree} of {len(tasks)}')
        if len(passes) > 2:
            repeat = sum(same(found['sim'].get(t), found['sim2'].get(t)) for t in tasks)
            print(f'{policy}: truth against truth again: the same on {repeat} of {len(tasks)}')
        for line in notes:
            print(f'  - {line}')
        agree_total[policy] = (same_episode, agree)
        print(flush=True)
    print(
        'summary (same episode re-scored; tracker run vs truth run): '
        + ', '.join(f'{p} {a}/{len(tasks)}; {b}/{len(tasks)}' for p, (a, b) in agree_total.items())
    )
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
