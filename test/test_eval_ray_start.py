"""``robofollow eval --ray`` whose Ray instance does not start in time: one line naming ``--ray-start-timeout``, no
traceback, no Ray process left; the timeout is the user's to set."""

from __future__ import annotations

import shutil
import tempfile

import eval_process
from graph_helpers import wait_until
from scale_support import cli_args, pids_mentioning


def test_a_ray_instance_that_does_not_start_in_time_is_one_line_naming_the_option(tmp_path) -> None:
    ray_tmp = tempfile.mkdtemp(prefix='rf-ray-')
    try:
        # 0 s: Ray's GCS cannot have written its port yet when it is first looked for, a real start-up timeout.
        args = cli_args(tmp_path / 'run', '--tasks', 'L0_pickup_*_1_left', '--ray', '--ray-start-timeout', '0')
        done = eval_process.run(args, timeout=120, RAY_TMPDIR=ray_tmp)
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith('robofollow eval: error: the Ray instance for this run did not start within 0 s ('), line
        assert line.endswith('; a busy machine may need longer: --ray-start-timeout SECONDS'), line
        wait_until(lambda: not pids_mentioning(ray_tmp), timeout=15, what='the Ray processes of the run to exit')
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_a_start_up_timeout_below_zero_is_refused_before_anything_runs(tmp_path) -> None:
    done = eval_process.run(cli_args(tmp_path / 'run', '--ray', '--ray-start-timeout', '-1'), timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == 'robofollow eval: error: --ray-start-timeout must be a number of seconds (0 or more)'
    assert not (tmp_path / 'run').exists()
