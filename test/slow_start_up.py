"""A ``robofollow`` subcommand module whose import takes a minute, to signal the command while it starts.

Importing it creates the file named by ``ROBOFOLLOW_TEST_STARTING``, then sleeps: a test knows, without
guessing at timing, that the command is in its start-up imports.
"""

from __future__ import annotations

import os
import time

HELP = 'a subcommand that is slow to import (tests only)'

open(os.environ['ROBOFOLLOW_TEST_STARTING'], 'a').close()
time.sleep(60)


def add_arguments(parser):
    """No options."""


def run(args):
    """Never reached in the tests."""
    return 0
