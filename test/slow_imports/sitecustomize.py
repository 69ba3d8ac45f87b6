"""Makes a process slow to start, to signal it while it starts (tests only; on ``PYTHONPATH`` only where a test puts
this folder).

``ROBOFOLLOW_TEST_SLOW_IMPORT`` names a module: its first import creates the file named by
``ROBOFOLLOW_TEST_STARTING``, then sleeps a minute, so a test knows, without guessing at timing, that the process is
inside that import. ``:startup`` does the same here, at interpreter start-up (before any code of the project runs),
for ``ROBOFOLLOW_TEST_STARTUP_SECONDS`` (default 2).
"""

from __future__ import annotations

import importlib.abc
import os
import sys
import time

_MODULE = os.environ.get('ROBOFOLLOW_TEST_SLOW_IMPORT', '')


def _starting(seconds: float) -> None:
    open(os.environ['ROBOFOLLOW_TEST_STARTING'], 'a').close()
    time.sleep(seconds)


class _SlowImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == _MODULE:
            sys.meta_path.remove(self)
            _starting(60.0)
        return None


if _MODULE == ':startup':
    _starting(float(os.environ.get('ROBOFOLLOW_TEST_STARTUP_SECONDS', '2')))
elif _MODULE:
    sys.meta_path.insert(0, _SlowImport())
