"""The sandbox a user policy's process runs in: bubblewrap namespaces, a scrubbed environment, a private /tmp.

``bwrap`` (bubblewrap, the Debian package that Flatpak runs its applications in) is used rather than
``unshare``/``clone`` flags of our own: it sets up user, PID, network, IPC, UTS and cgroup namespaces without
root, mounts a fresh ``/proc`` and ``/dev``, sets ``no_new_privs``, drops every capability, runs a small init as
PID 1 of the namespace (when the policy's process ends, every process it forked ends with it) and kills the
namespace when its parent dies. What the policy then sees:

- the filesystem read-only; private, size-capped tmpfs at ``/tmp`` (its scratch folder and ``HOME``),
  ``/dev/shm``, ``/run`` and ``/var/tmp``; the run's output folder (``hidden``) replaced by an empty tmpfs;
  the folders of its ``sys.path`` and the working directory bound back read-only where a tmpfs covered them;
- one network interface, its own loopback: no route to the host's DDS participants, shared-memory
  segments or abstract sockets; with ``network`` set, one TCP address reached through a relay;
- its own PID namespace (the evaluator's processes have no number there), as user 65534 without
  capabilities; the environment cleared but for ``PATH``, ``HOME``, ``TMPDIR``, ``LANG`` and ``PYTHONPATH``
  (the folder robofollow_ros is imported from).

Where ``bwrap`` is missing or cannot create namespaces (no unprivileged user namespaces, macOS),
``sandbox_problem`` says why in one line, and a ``module:function`` policy runs only with ``--trusted-policy``.
"""

from __future__ import annotations

import ctypes
import functools
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from robofollow_ros.errors import PolicyError

BWRAP = 'bwrap'
SANDBOX_UID = 65534
"""The policy's user and group inside the namespace (``nobody``): it owns nothing the evaluator owns."""
TMP_MIB = 1024
"""Size of the private ``/tmp`` (the policy's scratch folder); tmpfs pages are memory, so it is bounded."""
SHM_MIB = 64
"""Size of the private ``/dev/shm`` (PyTorch's data loaders use it; nobody else's segments are in it)."""
COVERED = ('/tmp', '/run', '/var/tmp', '/dev/shm')
"""Folders replaced by a private tmpfs: the host's sockets (Ray's raylet, X11, D-Bus) and shared memory live there."""
SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin'
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class SandboxOptions:
    """Where a sandboxed policy writes its output, what it must not see, and what network it may reach.

    Attributes:
        log_dir: the folder of the policy processes' output logs (stdout and stderr, capped); ``None``: the
            system's temporary folder.
        hidden: folders replaced by an empty tmpfs in the sandbox (the run's output folder).
        scratch: a folder the policy may write, bound at its own path and made its ``HOME`` and ``TMPDIR`` (it
            keeps what the policy writes from one process to the next: caches); ``None``: the private ``/tmp``.
        network: ``host:port`` the policy may open TCP connections to (``--policy-network``), reached from
            inside the sandbox at ``127.0.0.1:port``; ``None``: no network at all.
        readable: folders the policy must read (a checkpoint), bound back read-only where a tmpfs covered them.
    """

    log_dir: Path | None = None
    hidden: tuple[Path, ...] = ()
    scratch: Path | None = None
    network: str | None = None
    readable: tuple[Path, ...] = ()


def check_sandbox_options(options: SandboxOptions) -> None:
    """Refuse a scratch folder that is missing or overlaps a hidden folder, and a network address not ``host:port``.

    Raises:
        PolicyError: what is wrong, in one line.
    """
    from robofollow_ros.policy.isolation.network import parse_address

    if options.scratch is not None:
        scratch = Path(options.scratch).resolve()
        if not scratch.is_dir():
            raise PolicyError(f'--policy-scratch {options.scratch} is not a folder')
        for folder in (Path(hidden).resolve() for hidden in options.hidden):
            if _within(scratch, [folder]) or _within(folder, [scratch]):
                raise PolicyError(f'--policy-scratch {options.scratch} must lie outside the run folder {folder}')
    if options.network:
        parse_address(options.network)


@functools.lru_cache(maxsize=1)
def sandbox_problem() -> str | None:
    """Why a policy sandbox cannot be made on this machine, in one line; ``None`` when it can."""
    if not sys.platform.startswith('linux'):
        return f'the policy sandbox needs Linux namespaces (this is {sys.platform})'
    bwrap = shutil.which(BWRAP)
    if bwrap is None:
        return 'the policy sandbox needs bubblewrap (`apt install bubblewrap`), and bwrap is not on PATH'
    probe = [bwrap, '--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', '--proc', '/proc', '--', '/bin/true']
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f'bwrap cannot start a sandbox here: {error}'
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or [f'exit code {done.returncode}'])[0]
        return f'bwrap cannot create namespaces here (unprivileged user namespaces off?): {first}'
    return None


def protect_this_process() -> None:
    """Make this process non-dumpable: its ``/proc/<pid>`` files become root's and no process of the same
    user may ``ptrace`` it or read its memory (a no-op where ``prctl`` is missing)."""
    if not sys.platform.startswith('linux'):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def is_dumpable() -> bool:
    """Whether this process is dumpable (``PR_GET_DUMPABLE``)."""
    if not sys.platform.startswith('linux'):
        return True
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))


def _within(path: Path, folders: Iterable[str | Path]) -> bool:
    return any(path == Path(folder) or Path(folder) in path.parents for folder in folders)


def _code_folders(search_path: Sequence[str], cwd: Path) -> list[Path]:
    """The working directory and the existing ``sys.path`` folders that a covering tmpfs would hide."""
    folders = {cwd, *(Path(entry or cwd).resolve() for entry in search_path)}
    return sorted(
        (folder for folder in folders if folder.is_dir() and _within(folder, COVERED)), key=lambda p: len(p.parts)
    )


def package_root() -> Path:
    """The folder ``robofollow_ros`` is imported from (the sandbox's ``PYTHONPATH``)."""
    import robofollow_ros

    return Path(robofollow_ros.__file__).resolve().parent.parent


def bwrap_environment() -> dict[str, str]:
    """The environment to start ``bwrap`` with: the namespace's init is a fork of ``bwrap`` and keeps the
    environment it was started with readable in ``/proc/1/environ``, so it gets nothing of the evaluator's."""
    return {'PATH': SANDBOX_PATH, 'LANG': 'C.UTF-8'}


def bwrap_command(
    command: Sequence[str],
    *,
    options: SandboxOptions,
    search_path: Sequence[str],
    relay_dir: Path | None = None,
) -> list[str]:
    """``command`` wrapped in ``bwrap`` as the module docstring describes.

    Args:
        command: the policy host's command line (inherited descriptors stay open in the sandbox).
        options: the run's sandbox options.
        search_path: the evaluator's ``sys.path``, whose folders the policy imports its code from.
        relay_dir: a folder holding the network relay's socket, bound at the same path (``network`` only).
    """
    bwrap = shutil.which(BWRAP) or BWRAP
    cwd = Path.cwd().resolve()
    arguments = [
        bwrap,
        '--unshare-all',
        '--die-with-parent',
        '--new-session',
        '--uid',
        str(SANDBOX_UID),
        '--gid',
        str(SANDBOX_UID),
        '--cap-drop',
        'ALL',
        '--ro-bind',
        '/',
        '/',
        '--proc',
        '/proc',
        '--dev',
        '/dev',
    ]
    for covered in COVERED:
        if Path(covered).is_dir() and not Path(covered).is_symlink():
            size = SHM_MIB if covered == '/dev/shm' else TMP_MIB
            arguments += ['--perms', '1777', '--size', str(size << 20), '--tmpfs', covered]
    for code in _code_folders(search_path, cwd):
        arguments += ['--ro-bind-try', str(code), str(code)]
    for folder in (Path(path).resolve() for path in options.readable):
        if _within(folder, COVERED):
            arguments += ['--ro-bind-try', str(folder), str(folder)]
    if relay_dir is not None:
        arguments += ['--ro-bind', str(relay_dir), str(relay_dir)]
    home = '/tmp'
    if options.scratch is not None:
        home = str(Path(options.scratch).resolve())
        arguments += ['--bind', home, home]
    for folder in options.hidden:
        resolved = Path(folder).resolve()
        if resolved.is_dir():
            arguments += ['--tmpfs', str(resolved), '--remount-ro', str(resolved)]
    environment = {
        'PATH': SANDBOX_PATH,
        'HOME': home,
        'TMPDIR': home,
        'LANG': 'C.UTF-8',
        'PYTHONPATH': str(package_root()),
        'PYTHONDONTWRITEBYTECODE': '1',
    }
    arguments.append('--clearenv')
    for name, value in environment.items():
        arguments += ['--setenv', name, value]
    chdir = '/' if _within(cwd, [Path(folder).resolve() for folder in options.hidden]) else cwd
    arguments += ['--chdir', str(chdir), '--', *command]
    return arguments
