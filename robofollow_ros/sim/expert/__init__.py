"""The scripted expert (``expert``) and the language-blind baseline (``blind``): privileged simulation policies."""

from __future__ import annotations

from robofollow_ros.sim.expert.blind import BlindPolicy
from robofollow_ros.sim.expert.policy import ExpertPolicy

__all__ = ['BlindPolicy', 'ExpertPolicy']
