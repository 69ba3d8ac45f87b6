"""``python -m robofollow_ros`` runs the ``robofollow`` command."""

import sys

from robofollow_ros.cli import main

sys.exit(main())
