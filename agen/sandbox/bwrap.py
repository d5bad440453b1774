"""Turn a policy and a command into a bubblewrap command line, and say whether bubblewrap works here.

The mount view is the confinement: the kernel resolves every path (``..``, symlinks, a folder
swapped mid-call) inside it, so nothing outside the binds exists for the process, and nothing
but the workspace and the policy's write paths is writable (a hardlink across mounts is EXDEV).
The order of the binds matters: later ones sit on top of earlier ones, so ``$HOME`` is emptied
first and the paths the policy grants under it are bound back afterwards.

Environment values never go on bwrap's command line (``/proc/PID/cmdline`` is world-readable):
the caller starts bwrap with exactly the environment the process may have, and bwrap hands it on.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

from agen.sandbox.policy import Policy

INSTALL = (
    "install bubblewrap: sudo apt-get install bubblewrap (Debian, Ubuntu) or "
    "sudo dnf install bubblewrap (Fedora)"
)
"""What to do where bubblewrap is missing, said by every refusal."""

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""Bound read-only (a symlink such as /bin -> usr/bin is recreated as the same symlink)."""
ETC_SECRETS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/security/opasswd",
)
"""Hidden inside /etc: password hashes, sudo rules, SSH host keys, TLS private keys."""
EGRESS_DIR = "/run/agen"
"""Where the egress proxy's socket folder appears inside the sandbox."""
EGRESS_SOCKET = EGRESS_DIR + "/egress.sock"
BRIDGE_PORT = 3128
"""The port of the in-sandbox bridge to the proxy, on the sandbox's own loopback."""


@dataclass(frozen=True)
class Launch:
    """Where one sandboxed process starts, besides its policy."""

    workspace: str | None = None
    """A folder bound writable at its own path (the run's workspace)."""
    cwd: str | None = None
    """The working directory (default: the workspace, else /)."""
    runtime: bool = False
    """Bind this agen and its Python read-only (for ``agen mcp ...`` servers and the bridge)."""
    egress_socket: str | None = None
    """The egress proxy's Unix socket on the host; with it the command runs behind the bridge."""
    read: tuple[str, ...] = ()
    """Paths of this process bound read-only besides the policy's (a server's bundle folder)."""


def find_bwrap() -> str | None:
    """bubblewrap on PATH, or None."""
    return shutil.which("bwrap")


@dataclass(frozen=True)
class Availability:
    """Whether sandboxed processes can start here, and if not, why and what to do."""

    ok: bool
    path: str | None
    detail: str


def availability() -> Availability:
    """Find bwrap and start one empty sandbox with it (user namespaces may be off)."""
    path = find_bwrap()
    if path is None:
        if not sys.platform.startswith("linux"):
            return Availability(
                False, None, f"the sandbox needs Linux and bubblewrap ({sys.platform} has neither)"
            )
        return Availability(False, None, f"bubblewrap (bwrap) is not on PATH; {INSTALL}")
    return _probe(path)


@functools.cache
def _probe(path: str) -> Availability:
    argv = [
        path,
        "--unshare-all",
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        "--",
        "/bin/sh",
        "-c",
        "exit 0",
    ]  # no PATH lookup: a clean PATH may hold only agen
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Availability(False, path, f"{path} could not start a sandbox: {e}")
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"exit code {done.returncode}"
        return Availability(
            False,
            path,
            f"{path} could not start a sandbox ({why}); user namespaces may be disabled: "
            "sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04+ allow bwrap in AppArmor",
        )
    return Availability(True, path, f"{path} starts sandboxes (user namespaces work)")


@functools.cache
def runtime_paths() -> tuple[str, ...]:
    """This Python and this agen, as folders to bind read-only (those outside SYSTEM_DIRS)."""
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # agen/
    found = [
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        os.path.dirname(package),
    ]
    found += [p for p in sys.path if p and os.path.isabs(p)]
    bundled = getattr(sys, "_MEIPASS", None)  # the single-file binary's unpacked folder
    if isinstance(bundled, str):
        found.append(bundled)
    return _outermost(p for p in found if os.path.isdir(p) and not _under_system(p))


def _under_system(path: str) -> bool:
    real = os.path.realpath(path)
    return any(real == d or real.startswith(d + "/") for d in ("/usr", "/etc"))


def _outermost(paths: object) -> tuple[str, ...]:
    """Real paths, without any that lies inside another (binding the outer one is enough)."""
    real = sorted({os.path.realpath(p) for p in paths})  # type: ignore[attr-defined]
    out: list[str] = []
    for p in real:
        if not any(p == o or p.startswith(o.rstrip("/") + "/") for o in out):
            out.append(p)
    return tuple(out)


def _system_binds() -> list[str]:
    args: list[str] = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for secret in ETC_SECRETS:
        if os.path.isdir(secret) and not os.path.islink(secret):
            args += ["--tmpfs", secret]
        elif os.path.exists(secret):
            args += ["--ro-bind", "/dev/null", secret]
    return args


def home() -> str | None:
    """The home folder hidden behind an empty tmpfs (None when it is / or under a system folder)."""
    h = os.path.realpath(os.path.expanduser("~"))
    if h == "/" or _under_system(h) or h == "/tmp" or h.startswith("/tmp/"):
        return None
    return h


def bwrap_argv(bwrap: str, policy: Policy, launch: Launch, command: list[str]) -> list[str]:
    """The full command line: bwrap, its options for ``policy`` and ``launch``, then ``command``.

    Namespaces: all private (user, PID, network, IPC, UTS, cgroup); the command runs as PID 1 of
    its PID namespace (``--as-pid-1``), so when it exits the kernel kills every process left in
    it; ``--die-with-parent`` ends it with agen; ``--new-session`` keeps it off agen's terminal;
    capabilities are dropped and bwrap sets no-new-privileges."""
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--as-pid-1"]
    args += ["--cap-drop", "ALL", "--hostname", "sandbox"]
    args += _system_binds()
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    h = home()
    if h is not None:
        args += ["--tmpfs", h]
    reads = [*launch.read, *policy.read]
    if launch.runtime or launch.egress_socket:
        reads += runtime_paths()
    for path in reads:
        args += ["--ro-bind-try", path, path]
    for path in policy.write:
        args += ["--bind-try", path, path]
    workspace = os.path.realpath(launch.workspace) if launch.workspace else None
    if workspace:
        args += ["--bind", workspace, workspace]
    if launch.egress_socket:
        args += ["--ro-bind", os.path.dirname(launch.egress_socket), EGRESS_DIR]
    args += ["--chdir", launch.cwd or workspace or "/"]
    if launch.egress_socket:
        command = [
            *bridge_argv(),
            "--socket",
            EGRESS_SOCKET,
            "--port",
            str(BRIDGE_PORT),
            "--",
            *command,
        ]
    return [*args, "--", *command]


def bridge_argv() -> list[str]:
    """How to start the bridge with this interpreter (or this frozen agen binary)."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "mcp", "bridge"]
    # the file itself, isolated and without site: nothing but the standard library is imported
    return [sys.executable, "-I", "-S", os.path.join(os.path.dirname(__file__), "bridge.py")]


def egress_env() -> dict[str, str]:
    """The variables that send HTTP clients in the sandbox to the bridge (both spellings)."""
    url = f"http://127.0.0.1:{BRIDGE_PORT}"
    env: dict[str, str] = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = url
        env[name.lower()] = url
    env["NO_PROXY"] = env["no_proxy"] = ""
    return env
