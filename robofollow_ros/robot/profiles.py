"""Robot profiles: what a real dual-arm cell's drivers expect, as data (``config/robots/<name>.yaml``).

A profile states the driver kind and its topics, each arm's joint names and order, the sign and offset of each
joint, how the policy's normalised gripper (0 closed .. 1 open) maps to the driver's units, the row period and
control rate, the home pose, joint and velocity limits, the TCP workspace box, whether out-of-limit joints are
clamped or refused and whether too fast rows are refused or stretched. Everything in a profile is checked on
loading; a wrong or incomplete profile is refused with a ``ProfileError`` naming the file and the field, before
anything moves.

Units: ``home``, ``lower``, ``upper`` and ``velocity`` are in the policy's units (the 14-D layout: radians,
gripper 0..1); a joint's driver value is ``sign * policy + offset``. The conversions below are pure functions, so
the bridge, fake hardware and tests share them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from robofollow_ros.errors import ProfileError, RoboFollowError, SimulationError
from robofollow_ros.fields import FieldReader
from robofollow_ros.resources import share_candidates, share_file
from robofollow_ros.robot.description import RobotDescription, load_robot
from robofollow_ros.state_layout import ARM_COLUMNS, ARM_DOF, ARMS, STATE_DIM, Arm, Numbers
from robofollow_ros.textfiles import read_yaml

DriverKind = Literal['ros2_control', 'interbotix_xs', 'piper']
DRIVER_KINDS: tuple[DriverKind, ...] = ('ros2_control', 'interbotix_xs', 'piper')
"""ros2_control JointTrajectoryController, Interbotix xs_sdk (JointGroupCommand), AgileX piper_ros (JointState)."""
LimitPolicy = Literal['clamp', 'refuse']
LIMIT_POLICIES: tuple[LimitPolicy, ...] = ('clamp', 'refuse')
VelocityPolicy = Literal['refuse', 'stretch']
VELOCITY_POLICIES: tuple[VelocityPolicy, ...] = ('refuse', 'stretch')
"""What a row faster than the velocity limits does (``velocity_limits``, optional, default ``refuse``): refuse the
chunk from that row on, or stretch the row's time (``safety.limits.VelocityMode``)."""
PROFILE_FOLDER = 'config/robots'
LIMIT_TOLERANCE = 1e-6
"""How far (rad, rad/s) a profile's limit may lie beyond its robot description's (rounding in the YAML)."""


@dataclass(frozen=True)
class CommandInterface:
    """Where a driver takes commands: a topic and its message type (the bridge streams on topics; a controller's
    action server, where it has one, is a fact of the profile's ``upstream`` block, not used)."""

    topic: str
    type: str


@dataclass(frozen=True)
class GripperScale:
    """A gripper joint and its driver values for the policy's closed (0) and open (1); linear in between."""

    joint: str
    closed: float
    open: float
    unit: str

    def to_driver(self, normalised: float) -> float:
        """Driver value for a normalised gripper opening (0 closed, 1 open)."""
        return self.closed + float(normalised) * (self.open - self.closed)

    def opening(self, values: float | Numbers) -> np.ndarray:
        """Normalised openings of driver values, not clipped (a command outside the range shows as such)."""
        return (np.asarray(values, dtype=np.float64) - self.closed) / (self.open - self.closed)

    def from_driver(self, value: float) -> float:
        """Normalised opening for a driver value, clipped to 0..1 (a measured gripper overshoots its range)."""
        return float(np.clip(self.opening(float(value)), 0.0, 1.0))


@dataclass(frozen=True)
class OperatingMode:
    """The motor operating mode a gripper must be in before its commands mean what the profile says (xs_sdk takes
    a command in the units of the motor's mode), and the driver's service that tells it (xs_sdk's
    ``get_robot_info``, interbotix_xs_msgs/srv/RobotInfo)."""

    mode: str
    service: str


@dataclass(frozen=True)
class GripperProfile:
    """How one arm's gripper is commanded and read back (the two may differ: xs_sdk takes a motor angle and
    publishes finger positions), and the operating mode it must be in, where the driver has modes."""

    command: GripperScale
    interface: CommandInterface
    feedback: GripperScale
    operating_mode: OperatingMode | None = None


@dataclass(frozen=True)
class ArmProfile:
    """One arm of the profile.

    Attributes:
        arm: ``left`` or ``right``.
        command: the arm's command topic.
        joint_states: topic of the arm's measured joints.
        joints: the driver's six joint names, in the order of the 14-D layout's columns.
        signs, offsets: per joint, driver = sign * policy + offset (rad).
        lower, upper, velocity: joint limits (rad) and velocity limits (rad/s), in policy units.
        acceleration: the largest change of each joint's speed a command may ask (rad/s^2; ``inf``: no limit, for a
            profile that states none).
        home: six joints (rad) and the gripper (0..1), in policy units.
        gripper: the gripper's command and feedback mapping.
    """

    arm: Arm
    command: CommandInterface
    joint_states: str
    joints: tuple[str, ...]
    signs: np.ndarray
    offsets: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    home: np.ndarray
    gripper: GripperProfile
    acceleration: np.ndarray = dataclasses.field(default_factory=lambda: np.full(ARM_DOF, np.inf))

    def joints_to_driver(self, joints: Numbers) -> np.ndarray:
        """Joint positions in policy units (..., 6) in the driver's (no check: non-finite values pass through)."""
        return self.signs * np.asarray(joints, dtype=np.float64) + self.offsets

    def joints_from_driver(self, positions: Numbers) -> np.ndarray:
        """The driver's joint positions (..., 6) in policy units (no check: non-finite values pass through, for an
        audit to report)."""
        return (np.asarray(positions, dtype=np.float64) - self.offsets) * self.signs


@dataclass(frozen=True)
class UpstreamDriver:
    """What a profile says of the upstream driver it is written for: the driver, where its facts were read
    (``sources``), a copy of those facts (``facts``: topics, joint names, limits, units, rates, as the upstream
    configuration states them) and the ``edits`` the upstream configuration needs before the profile drives it
    (each a mapping with ``why`` and, where the profile uses another value than the fact, ``value``).
    ``test/test_robot_profile_upstream.py`` checks the profile's own fields against them, field by field."""

    driver: str
    sources: tuple[str, ...]
    facts: dict[str, Any]
    edits: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class RobotProfile:
    """A robot profile as loaded and checked (see the module docstring for units).

    Attributes:
        name: the file's stem (``robot_profile:=<name>``).
        path: the file it was read from.
        description: one line for listings.
        robot: the registered robot description (``robot.specs``) its joints and limits agree with, or None.
        driver: driver kind.
        row_period: seconds between chunk rows sent to the robot.
        control_rate: the driver's command rate (Hz); streamed drivers get a command every period.
        speed_percent: the driver's speed setting in percent (Piper), or None.
        joint_limits: ``clamp`` out-of-limit joints to the limit, or ``refuse`` the command.
        velocity_limits: ``refuse`` a row faster than the velocity limits, or ``stretch`` its time (default refuse).
        workspace_min, workspace_max: the TCP box (m) in the ``world`` frame.
        arms: both arms.
        upstream: the upstream driver it is written for, with its facts and sources, or None.
    """

    name: str
    path: Path
    description: str
    robot: str | None
    driver: DriverKind
    row_period: float
    control_rate: float
    speed_percent: float | None
    joint_limits: LimitPolicy
    workspace_min: np.ndarray
    workspace_max: np.ndarray
    arms: dict[Arm, ArmProfile]
    velocity_limits: VelocityPolicy = 'refuse'
    upstream: UpstreamDriver | None = None

    def home_state(self) -> np.ndarray:
        """The 14-D home state in policy units."""
        return np.concatenate([self.arms[arm].home for arm in ARMS])

    def state_lower(self) -> np.ndarray:
        """Lower bounds of the 14-D state (gripper 0)."""
        return np.concatenate([np.append(self.arms[arm].lower, 0.0) for arm in ARMS])

    def state_upper(self) -> np.ndarray:
        """Upper bounds of the 14-D state (gripper 1)."""
        return np.concatenate([np.append(self.arms[arm].upper, 1.0) for arm in ARMS])


@dataclass(frozen=True)
class DriverArmCommand:
    """One arm's target in the driver's names and units.

    Attributes:
        joints: the driver's six joint names.
        positions: six joint positions (driver units).
        gripper_joint: the gripper's command joint.
        gripper: gripper command (driver units).
    """

    joints: tuple[str, ...]
    positions: np.ndarray
    gripper_joint: str
    gripper: float


# --- conversions (pure) -------------------------------------------------------------------------------------------


def arm_to_driver(profile: RobotProfile, arm: Arm, values: Numbers) -> DriverArmCommand:
    """An arm's seven policy values (six joints in rad, gripper 0..1) in the driver's names and units.

    Raises:
        ProfileError: not seven finite numbers.
    """
    row = _finite(values, size=ARM_DOF + 1, what=f'{arm} arm command')
    spec = profile.arms[arm]
    return DriverArmCommand(
        joints=spec.joints,
        positions=spec.joints_to_driver(row[:ARM_DOF]),
        gripper_joint=spec.gripper.command.joint,
        gripper=spec.gripper.command.to_driver(row[ARM_DOF]),
    )


def arm_from_driver(profile: RobotProfile, arm: Arm, positions: Numbers, gripper: float) -> np.ndarray:
    """An arm's seven policy values from six driver joint positions and a gripper command value (inverse of
    ``arm_to_driver``; the gripper clipped to 0..1).

    Raises:
        ProfileError: not six finite joint positions, or a non-finite gripper value.
    """
    joints = _finite(positions, size=ARM_DOF, what=f'{arm} arm driver positions')
    grip = _finite([gripper], size=1, what=f'{arm} gripper driver value')[0]
    spec = profile.arms[arm]
    return np.append(spec.joints_from_driver(joints), spec.gripper.command.from_driver(grip))


def to_driver(profile: RobotProfile, action: Numbers) -> dict[Arm, DriverArmCommand]:
    """A 14-D action (or state) as one driver command per arm.

    Raises:
        ProfileError: not 14 finite numbers.
    """
    row = _finite(action, size=STATE_DIM, what='action')
    return {arm: arm_to_driver(profile, arm, row[ARM_COLUMNS[arm]]) for arm in ARMS}


def from_driver(profile: RobotProfile, commands: Mapping[Arm, DriverArmCommand]) -> np.ndarray:
    """The 14-D action a pair of driver commands stands for (inverse of ``to_driver``)."""
    return np.concatenate([arm_from_driver(profile, a, commands[a].positions, commands[a].gripper) for a in ARMS])


def arm_state_from_joint_state(
    profile: RobotProfile, arm: Arm, names: Sequence[str], positions: Numbers
) -> np.ndarray | None:
    """An arm's seven policy values from a driver's measured JointState (names and positions), through the
    gripper's feedback mapping; None when the message lacks one of the arm's joints.

    Raises:
        ProfileError: names and positions differ in length, or a needed position is not finite.
    """
    if len(names) != len(positions):
        raise ProfileError(f'{arm} joint state: {len(names)} names but {len(positions)} positions')
    by_name = dict(zip(names, positions, strict=True))
    spec = profile.arms[arm]
    needed = (*spec.joints, spec.gripper.feedback.joint)
    if any(name not in by_name for name in needed):
        return None
    values = _finite([by_name[name] for name in needed], size=ARM_DOF + 1, what=f'{arm} joint state')
    return np.append(spec.joints_from_driver(values[:ARM_DOF]), spec.gripper.feedback.from_driver(values[-1]))


def _finite(values: Numbers, *, size: int, what: str) -> np.ndarray:
    try:
        row = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ProfileError(f'{what}: not numbers: {values!r}') from None
    if row.shape != (size,) or not np.all(np.isfinite(row)):
        raise ProfileError(f'{what}: needs {size} finite numbers, got {values!r}')
    return row


# --- loading and checking -----------------------------------------------------------------------------------------


def profile_path(name: str) -> Path:
    """The file of the shipped profile ``name`` (``config/robots/<name>.yaml``), or ``name`` itself when it is a path
    to a YAML file.

    Raises:
        ProfileError: no such profile.
    """
    if name.endswith(('.yaml', '.yml')):
        return Path(name)
    try:
        return share_file(f'{PROFILE_FOLDER}/{name}.yaml')
    except RoboFollowError:
        raise ProfileError(
            f'unknown robot profile {name!r}; choose one of {", ".join(profile_names()) or "(none installed)"} '
            'or give a path to a .yaml file'
        ) from None


def profile_names() -> tuple[str, ...]:
    """The shipped profiles' names, sorted."""
    for candidate in share_candidates():
        folder = candidate / PROFILE_FOLDER
        if folder.is_dir():
            return tuple(sorted(p.stem for p in folder.glob('*.yaml')))
    return ()


def load_profile(name: str) -> RobotProfile:
    """Load and check a robot profile by name (``config/robots/<name>.yaml``) or path.

    Raises:
        ProfileError: the file is missing or unreadable, or a field is missing, unknown, of the wrong kind or out of
            range, or the joints disagree with the robot description the profile names; the message names the file
            and the field.
    """
    path = profile_path(name)
    data = read_yaml(path, what='robot profile', error=ProfileError)
    return parse_profile(data, path=path)


def parse_profile(data: object, *, path: Path) -> RobotProfile:
    """Check an already parsed profile document (see ``load_profile``); ``path`` names it in errors.

    Raises:
        ProfileError: as ``load_profile``.
    """
    reader = _Reader(path)
    top = reader.mapping(
        data, '', required=_TOP_FIELDS, optional=('description', 'speed_percent', 'velocity_limits', 'upstream')
    )
    driver_kind = cast(DriverKind, reader.choice(top['driver'], 'driver', DRIVER_KINDS))
    robot_name = top['robot']
    if robot_name is not None and not isinstance(robot_name, str):
        reader.fail('robot', f'must be a registered robot name or null, got {robot_name!r}')
    robot: RobotDescription | None = None
    if robot_name is not None:
        try:
            robot = load_robot(robot_name)
        except SimulationError as exc:
            reader.fail('robot', str(exc))
    speed = top.get('speed_percent')
    if driver_kind == 'piper' and speed is None:
        reader.fail('speed_percent', 'is required for the piper driver (velocity[6] of joint_ctrl_single, 1..100)')
    speed_percent = None if speed is None else reader.number(speed, 'speed_percent', low=1.0, high=100.0)
    row_period = reader.number(top['row_period'], 'row_period', positive=True)
    control_rate = reader.number(top['control_rate'], 'control_rate', positive=True)
    if control_rate * row_period < 1.0 - 1e-9:
        reader.fail('control_rate', f'{control_rate} Hz is slower than one command per row ({row_period} s)')
    workspace = reader.mapping(top['workspace'], 'workspace', required=('min', 'max'))
    low = reader.vector(workspace['min'], 'workspace.min', sizes=(3,))
    high = reader.vector(workspace['max'], 'workspace.max', sizes=(3,))
    if not np.all(low < high):
        reader.fail('workspace', f'min {low.tolist()} must be below max {high.tolist()} on every axis')
    arms_data = reader.mapping(top['arms'], 'arms', required=ARMS)
    arms = {arm: _arm(reader, arms_data[arm], arm, robot) for arm in ARMS}
    if arms['left'].command.topic == arms['right'].command.topic:
        # One controller for both arms: a joint named on both sides would be commanded twice.
        shared = set(arms['left'].joints) & set(arms['right'].joints)
        if shared:
            reader.fail('arms.right.joints', f'share names {sorted(shared)} with the left arm on the same topic')
    description = top.get('description', '')
    if not isinstance(description, str):
        reader.fail('description', 'must be text')
    return RobotProfile(
        name=path.stem,
        path=path,
        description=description,
        robot=robot_name,
        driver=driver_kind,
        row_period=row_period,
        control_rate=control_rate,
        speed_percent=speed_percent,
        joint_limits=cast(LimitPolicy, reader.choice(top['joint_limits'], 'joint_limits', LIMIT_POLICIES)),
        workspace_min=low,
        workspace_max=high,
        arms=arms,
        velocity_limits=cast(
            VelocityPolicy,
            reader.choice(top.get('velocity_limits', 'refuse'), 'velocity_limits', VELOCITY_POLICIES),
        ),
        upstream=None if top.get('upstream') is None else _upstream(reader, top['upstream']),
    )


def _upstream(reader: _Reader, data: object) -> UpstreamDriver:
    spec = reader.mapping(data, 'upstream', required=('driver', 'sources', 'facts'), optional=('edits',))
    driver = spec['driver']
    if not isinstance(driver, str) or not driver.strip():
        reader.fail('upstream.driver', 'must name the upstream driver')
    sources = spec['sources']
    if not isinstance(sources, list) or not sources or not all(isinstance(s, str) and s.strip() for s in sources):
        reader.fail('upstream.sources', 'must list where the facts were read (one or more texts)')
    facts, edits = spec['facts'], spec.get('edits') or {}
    for field, value in (('upstream.facts', facts), ('upstream.edits', edits)):
        if not isinstance(value, dict):
            reader.fail(field, f'must be a mapping, got {type(value).__name__}')
    for name, edit in edits.items():
        entry = reader.mapping(edit, f'upstream.edits.{name}', required=('why',), optional=('value',))
        if not isinstance(entry['why'], str) or not entry['why'].strip():
            reader.fail(f'upstream.edits.{name}.why', 'must say what to change upstream and why')
    return UpstreamDriver(driver=driver, sources=tuple(sources), facts=dict(facts), edits=dict(edits))


_TOP_FIELDS = ('driver', 'robot', 'row_period', 'control_rate', 'joint_limits', 'workspace', 'arms')
_ARM_FIELDS = ('command', 'joint_states', 'joints', 'signs', 'offsets', 'lower', 'upper', 'velocity', 'home', 'gripper')


def _arm(reader: _Reader, data: object, arm: Arm, robot: RobotDescription | None) -> ArmProfile:
    field = f'arms.{arm}'
    spec = reader.mapping(data, field, required=_ARM_FIELDS, optional=('acceleration',))
    joints = reader.names(spec['joints'], f'{field}.joints', size=ARM_DOF)
    signs = reader.vector(spec['signs'], f'{field}.signs', sizes=(ARM_DOF,))
    for i, sign in enumerate(signs):
        if sign not in (1.0, -1.0):
            reader.fail(f'{field}.signs[{i}]', f'must be 1 or -1, got {sign:g}')
    offsets = reader.vector(spec['offsets'], f'{field}.offsets', sizes=(ARM_DOF,))
    lower, upper, velocity, home = _arm_limits(reader, spec, field)
    if robot is not None:
        _agree_with_description(reader, field, robot, arm, joints, lower, upper, velocity)
    return ArmProfile(
        arm=arm,
        command=_interface(reader, spec['command'], f'{field}.command'),
        joint_states=reader.topic(spec['joint_states'], f'{field}.joint_states'),
        joints=joints,
        signs=signs,
        offsets=offsets,
        lower=lower,
        upper=upper,
        velocity=velocity,
        home=home,
        gripper=_gripper(reader, spec['gripper'], f'{field}.gripper'),
        acceleration=_acceleration(reader, spec.get('acceleration'), f'{field}.acceleration'),
    )


def _acceleration(reader: _Reader, value: object, field: str) -> np.ndarray:
    """An arm's ``acceleration`` limits (rad/s^2, positive), or no limit when the profile states none."""
    return np.full(ARM_DOF, np.inf) if value is None else _positive_vector(reader, value, field)


def _positive_vector(reader: _Reader, value: object, field: str) -> np.ndarray:
    """One positive number per arm joint (a velocity or acceleration limit)."""
    values = reader.vector(value, field, sizes=(ARM_DOF,))
    for i in range(ARM_DOF):
        if not values[i] > 0.0:
            reader.fail(f'{field}[{i}]', f'must be positive, got {values[i]:g}')
    return values


def _arm_limits(
    reader: _Reader, spec: dict[str, Any], field: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """An arm's ``lower``, ``upper``, ``velocity`` and ``home``, each checked against the others."""
    lower = reader.vector(spec['lower'], f'{field}.lower', sizes=(ARM_DOF,))
    upper = reader.vector(spec['upper'], f'{field}.upper', sizes=(ARM_DOF,))
    for i in range(ARM_DOF):
        if not lower[i] < upper[i]:
            reader.fail(f'{field}.upper[{i}]', f'{upper[i]:g} must be above lower {lower[i]:g}')
    velocity = _positive_vector(reader, spec['velocity'], f'{field}.velocity')
    home = reader.vector(spec['home'], f'{field}.home', sizes=(ARM_DOF + 1,))
    for i in range(ARM_DOF):
        if not lower[i] <= home[i] <= upper[i]:
            reader.fail(f'{field}.home[{i}]', f'{home[i]:g} is outside the limits [{lower[i]:g}, {upper[i]:g}]')
    if not 0.0 <= home[ARM_DOF] <= 1.0:
        reader.fail(f'{field}.home[{ARM_DOF}]', f'the gripper is normalised 0..1, got {home[ARM_DOF]:g}')
    return lower, upper, velocity, home


def _agree_with_description(
    reader: _Reader,
    field: str,
    robot: RobotDescription,
    arm: Arm,
    joints: tuple[str, ...],
    lower: np.ndarray,
    upper: np.ndarray,
    velocity: np.ndarray,
) -> None:
    described = robot.arms[arm]
    for i, (name, urdf_name) in enumerate(zip(joints, described.joints, strict=True)):
        # A driver may name joints with the URDF's arm prefix (one robot_state_publisher) or without it (one
        # namespace per arm, as xs_sdk does).
        if name not in (urdf_name, urdf_name.removeprefix(f'{arm}_')):
            reader.fail(f'{field}.joints[{i}]', f'{name!r} is not {urdf_name!r} of robot {robot.name!r} (URDF order)')
    for i in range(ARM_DOF):
        name = described.joints[i]
        if lower[i] < described.lower[i] - LIMIT_TOLERANCE:
            reader.fail(f'{field}.lower[{i}]', f'{lower[i]:g} is below the URDF limit {described.lower[i]:g} of {name}')
        if upper[i] > described.upper[i] + LIMIT_TOLERANCE:
            reader.fail(f'{field}.upper[{i}]', f'{upper[i]:g} is above the URDF limit {described.upper[i]:g} of {name}')
        if velocity[i] > described.velocity[i] + LIMIT_TOLERANCE:
            reader.fail(
                f'{field}.velocity[{i}]', f'{velocity[i]:g} is above the URDF limit {described.velocity[i]:g} of {name}'
            )


def _interface(reader: _Reader, data: object, field: str) -> CommandInterface:
    spec = reader.mapping(data, field, required=('topic', 'type'))
    message_type = spec['type']
    if not isinstance(message_type, str) or message_type.count('/') != 2:
        reader.fail(
            f'{field}.type', f'must be a ROS type like trajectory_msgs/msg/JointTrajectory, got {message_type!r}'
        )
    return CommandInterface(topic=reader.topic(spec['topic'], f'{field}.topic'), type=message_type)


def _gripper(reader: _Reader, data: object, field: str) -> GripperProfile:
    spec = reader.mapping(data, field, required=('command', 'interface', 'feedback'), optional=('operating_mode',))
    mode: OperatingMode | None = None
    if 'operating_mode' in spec:
        entry = reader.mapping(spec['operating_mode'], f'{field}.operating_mode', required=('mode', 'service'))
        if not isinstance(entry['mode'], str) or not entry['mode']:
            reader.fail(f'{field}.operating_mode.mode', f'must name the motor mode, got {entry["mode"]!r}')
        mode = OperatingMode(
            mode=entry['mode'], service=reader.topic(entry['service'], f'{field}.operating_mode.service')
        )
    return GripperProfile(
        command=_scale(reader, spec['command'], f'{field}.command'),
        interface=_interface(reader, spec['interface'], f'{field}.interface'),
        feedback=_scale(reader, spec['feedback'], f'{field}.feedback'),
        operating_mode=mode,
    )


def _scale(reader: _Reader, data: object, field: str) -> GripperScale:
    spec = reader.mapping(data, field, required=('joint', 'closed', 'open', 'unit'))
    closed = reader.number(spec['closed'], f'{field}.closed')
    opened = reader.number(spec['open'], f'{field}.open')
    if math.isclose(closed, opened, abs_tol=1e-9):
        reader.fail(f'{field}.open', f'must differ from closed ({closed:g})')
    unit = spec['unit']
    if not isinstance(unit, str) or not unit:
        reader.fail(f'{field}.unit', f'must name the driver unit (m, rad, ...), got {unit!r}')
    return GripperScale(
        joint=reader.names([spec['joint']], f'{field}.joint', size=1)[0], closed=closed, open=opened, unit=unit
    )


class _Reader(FieldReader):
    """Reads one profile document, failing with ``robot profile <file>: <field>: <problem>`` (one line)."""

    def __init__(self, path: Path) -> None:
        super().__init__('robot profile', path, error=ProfileError)

    def names(self, value: object, field: str, *, size: int) -> tuple[str, ...]:
        if not isinstance(value, list) or len(value) != size:
            self.fail(field, f'must be a list of {size} joint names, got {value!r}')
        for i, name in enumerate(value):
            if not isinstance(name, str) or not name or any(c.isspace() for c in name):
                self.fail(f'{field}[{i}]' if size > 1 else field, f'must be a joint name, got {name!r}')
        if len(set(value)) != len(value):
            self.fail(field, f'names a joint twice: {value}')
        return tuple(value)

    def topic(self, value: object, field: str) -> str:
        if not isinstance(value, str) or not value.startswith('/') or any(c.isspace() for c in value):
            self.fail(field, f'must be an absolute ROS name like /joint_states, got {value!r}')
        return value


def arm_command_topics(name: str) -> dict[str, str]:
    """``{topic: message type}`` of every arm and gripper command of the robot profile ``name`` (a shipped name or a
    path; empty for ``''``).

    Raises:
        ProfileError: the profile is unknown or wrong.
    """
    if not name:
        return {}
    profile = load_profile(name)
    found: dict[str, str] = {}
    for arm in ARMS:
        spec = profile.arms[arm]
        found[spec.command.topic] = spec.command.type
        found[spec.gripper.interface.topic] = spec.gripper.interface.type
    return found
