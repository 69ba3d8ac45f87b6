"""Errors raised by robofollow_ros.

Every error a user can cause (bad task id, malformed trajectory, dead policy server, truncated bag)
derives from ``RoboFollowError`` so that the command line can print one clear line and exit non-zero.
"""

from __future__ import annotations


class RoboFollowError(Exception):
    """Base class of every robofollow_ros error."""


class RegistryError(RoboFollowError):
    """A lookup in the benchmark registry failed."""


class UnknownTaskError(RegistryError):
    """No task has the given id."""


class UnknownSceneError(RegistryError):
    """The scene number or name is not one of the four scene families."""


class UnknownLevelError(RegistryError):
    """The level is not one of L0-L3."""


class UnknownVariantError(RegistryError):
    """The variant is not one of ``published`` and ``corrected``."""


class UnknownLayoutError(RegistryError):
    """No layout has the given name."""


class UnknownObjectError(RegistryError):
    """An object name is not part of the scene or layout."""


class TrajectoryError(RoboFollowError):
    """A trajectory is malformed: missing fields, non-finite values, unsorted time, unknown objects."""


class BagError(RoboFollowError):
    """A rosbag2 recording cannot be read or is incomplete."""


class SimulationError(RoboFollowError):
    """The simulator cannot build or run a scene."""


class DriverCommandError(SimulationError):
    """The fake hardware refused a driver command as the real driver would (the message says why); nothing changed."""


class PolicyError(RoboFollowError):
    """A policy failed, timed out or returned an invalid action chunk."""


class LayoutError(RoboFollowError):
    """A JointState or JointTrajectory does not carry the joints of the 14-D layout."""


class ProfileError(RoboFollowError):
    """A robot profile (``config/robots/<name>.yaml``) is missing, malformed or disagrees with the robot."""


class EpisodeSpecError(RoboFollowError):
    """An episode description (``/robofollow/episode`` JSON) is malformed or names an unknown task."""


class GraphError(RoboFollowError):
    """The ROS node graph cannot start, lost a required node, or timed out waiting for one."""


class MotionStoppedError(RoboFollowError):
    """``/robofollow/stop`` was called: the arms hold and no motion is sent until the next episode starts."""


class MotionPausedError(RoboFollowError):
    """The measured joint state paused while a chunk ran (longer than ``state_pause``, or half that with the arms
    moving fast: ``blind_travel``) and came back: the arms were brought to a controlled stop, the rest of the chunk
    dropped; the episode goes on from where they stopped."""


class PoseMissingError(GraphError):
    """A real cell's trial could not start: an object's pose never came from the pose source since the trial began
    (its tag hidden or not seen; a layout check passed by override). The trial is void, never run blind."""


class GraphLostError(GraphError):
    """One of several graphs lost a node mid-run (or the run stopped); its trial in flight runs on another graph."""


class PolicyConnectionError(PolicyError):
    """The connection to a policy server broke or timed out (the request may or may not have run)."""


class RunFolderError(RoboFollowError):
    """An output folder cannot hold this run: in use by another run, holds another run, or is not a folder."""


class WorkerLostError(RoboFollowError):
    """Simulator workers (processes or Ray actors) kept dying on a trial, or none is left to run trials."""


class PolicyPoolError(PolicyError):
    """Every policy server of an ``endpoints`` pool is unreachable."""


class PolicyServerDownError(PolicyError):
    """The run's one policy server kept refusing connections for several trials in a row."""


class DatasetError(RoboFollowError):
    """A demonstration collection or dataset cannot be written or read (options differ, malformed files)."""


class PolicyProcessError(PolicyError):
    """An isolated policy's process died, could not start, or broke the pipe protocol (``policy/isolation``)."""


class PolicyRaisedError(PolicyError):
    """An isolated policy raised in its own process; only the exception's type and message cross the pipe.

    Attributes:
        type_name: the exception's class name (``ValueError``, ``SystemExit``...).
        detail: its message.
        own: it was a ``PolicyError`` (its message is shown as it is, like one raised in-process).
        fatal: it was not an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``): the instance is not reused.
        memory: it was a ``MemoryError`` (the process reached its memory limit).
    """

    def __init__(self, type_name: str, detail: str, *, own: bool, fatal: bool, memory: bool) -> None:
        super().__init__(detail if own else f'{type_name}: {detail}' if detail else type_name)
        self.type_name = type_name
        self.detail = detail
        self.own = own
        self.fatal = fatal
        self.memory = memory


class PolicyChunkError(PolicyError):
    """An isolated policy's chunk was refused by ``validate_chunk`` in its own process (the message says why)."""


class SafetyError(RoboFollowError):
    """Safety limits are not usable (a profile's joint, velocity or workspace limits, a row period, a deadline)."""


class MarkerConfigError(RoboFollowError):
    """A marker configuration (``config/markers/<name>.yaml``) is missing, unreadable or wrong (the field is named)."""


class CalibrationError(RoboFollowError):
    """A camera extrinsic could not be trusted (too few board tags seen, or the fit's error is too large)."""
