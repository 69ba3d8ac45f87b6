"""What the benches that launch a whole graph share: the ``robofollow launch`` command line and the environment of a
private ROS domain on this host."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from robofollow_ros.graph.declaration import graph_environment

ROOT = Path(__file__).resolve().parents[1]


def launch_command(graph: str, **arguments: str) -> list[str]:
    """``robofollow launch <graph> name:=value ...`` with this interpreter."""
    return [sys.executable, '-m', 'robofollow_ros', 'launch', graph, *(f'{k}:={v}' for k, v in arguments.items())]


def graph_env(domain: int, *, python_path: tuple[Path, ...] = (ROOT,)) -> dict[str, str]:
    """This process's environment in ROS domain ``domain`` with the graph's defaults (the shipped Fast DDS profile,
    headless rendering, localhost discovery) and ``python_path`` ahead of ``PYTHONPATH``."""
    paths = [*(str(path) for path in python_path), os.environ.get('PYTHONPATH', '')]
    return graph_environment(
        dict(os.environ, ROS_DOMAIN_ID=str(domain), PYTHONPATH=os.pathsep.join(paths).rstrip(os.pathsep))
    )
