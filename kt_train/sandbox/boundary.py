"""The filesystem and namespace boundary around the pool workers: bubblewrap, or (explicitly allowed) nothing.

Each worker is started as `bwrap ... -- python -I -S -c BOOT` in new pid, IPC, UTS and network namespaces and a mount
namespace of its own whose root is an empty, read-only tmpfs with, bound read-only, only:

- /usr (and the /bin, /lib, /lib64, /sbin links or directories of the host), for the C library and /bin/sh;
- the interpreter's prefix (`sys.base_prefix`: executable and standard library) and the site-packages directories
  on `sys.path` (installed packages: what the preloaded modules import);
- `kt_train/__init__.py` and `kt_train/sandbox/` under /opt/kt-train, and the package of any preloaded module that
  lives elsewhere (e.g. in a checkout) under /opt/kt-train/<name>;
- a fresh /proc (of the worker's pid namespace), a minimal /dev (null, zero, full, random, urandom, tty, pts), and two
  private, size-limited, writable tmpfs: /tmp (the jobs' working directory) and /dev/shm.

Nothing else exists inside: no home directory, no checkout, no cache, no /etc, no dataset. The worker keeps only the
capabilities it needs to run jobs as other uids and clean up after them; bubblewrap sets PR_SET_NO_NEW_PRIVS, starts
it with an empty environment (PATH and LANG only) and kills the whole namespace when the caller dies
(`--die-with-parent`): kill -9 of a `kt` process leaves no job running.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from dataclasses import dataclass, field

from kt_train.sandbox.config import SandboxConfig

INNER_ROOT = "/opt/kt-train"
"""Where kt_train's sandbox package (and preloaded packages from outside site-packages) appear inside."""
JOB_DIR = "/tmp"
"""The jobs' working directory, HOME and TMPDIR inside the boundary (a private tmpfs, emptied after every job)."""
SCRATCH_DIRS = ("/tmp", "/dev/shm")
"""Every place inside the boundary a job can write to; the worker empties them after each job."""
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
"""The whole environment of a worker (jobs add HOME and TMPDIR)."""
WORKER_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_CHOWN")
"""What a worker of a root caller keeps (jobs as other uids, killing and cleaning up after them); jobs keep none."""
MOUNT_CAP = "CAP_SYS_ADMIN"
"""What every worker starts with besides, to mount its scratch tmpfs with an inode bound, and drops right after."""


_OWN_MOUNTS = ("/tmp", "/var/tmp", "/dev", "/proc")
"""Places the boundary mounts afresh: a host path under one of them (a checkout or venv in /tmp) is bound elsewhere."""


def _target(path: str) -> str:
    """Where the host `path` appears inside."""
    return f"{INNER_ROOT}/host{path}" if _under(path, list(_OWN_MOUNTS)) else path


def _translate(path: str, binds: dict[str, str]) -> str | None:
    """The inside path of host `path` through `binds` (None: not visible)."""
    for source, target in binds.items():
        if _under(path, [source]):
            return target + path[len(source) :]
    return None


class SandboxUnavailable(RuntimeError):
    """No boundary can be made here and weak isolation was not allowed."""


@dataclass(frozen=True)
class Isolation:
    """How workers are started, and what their jobs can see (for `kt sandbox run --explain`)."""

    kind: str  # "bubblewrap" or "weak"
    prefix: tuple[str, ...] = ()  # the command before the interpreter (bwrap and its options)
    sys_path: tuple[str, ...] = ()  # the worker's sys.path
    visible: tuple[str, ...] = ()  # host paths bound read-only (inside at the same path, or under INNER_ROOT)
    namespaces: tuple[str, ...] = ()
    reason: str = ""  # why weak
    binds: dict[str, str] = field(default_factory=dict)  # host path -> path inside
    interpreter: str = ""  # the worker's interpreter, as a path inside

    @property
    def private_view(self) -> bool:
        return self.kind == "bubblewrap"


def _package_dir() -> str:
    """The directory holding the kt_train package."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _site_dirs() -> list[str]:
    """The site-packages directories on sys.path (realpaths, existing)."""
    dirs = []
    for entry in sys.path:
        if (
            entry
            and os.path.basename(entry.rstrip("/")) in ("site-packages", "dist-packages")
            and os.path.isdir(entry)
        ):
            dirs.append(os.path.realpath(entry))
    return list(dict.fromkeys(dirs))


def _under(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _preload_binds(preload: tuple[str, ...], roots: list[str]) -> dict[str, str]:
    """Host location -> location inside, for every preloaded top-level module outside the bound roots."""
    binds: dict[str, str] = {}
    for name in dict.fromkeys(n.split(".")[0] for n in preload):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin in (None, "built-in", "frozen"):
            continue
        if spec.submodule_search_locations:
            source = os.path.realpath(next(iter(spec.submodule_search_locations)))
            target = f"{INNER_ROOT}/{name}"
        else:
            source = os.path.realpath(spec.origin)
            target = f"{INNER_ROOT}/{os.path.basename(source)}"
        if not _under(source, roots) and name != "kt_train":
            binds[source] = target
    return binds


def _parents(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _bwrap_command(config: SandboxConfig, binds: dict[str, str], as_root: bool) -> list[str]:
    """The bwrap command line (up to and including `--`) for `binds` (host -> inside), all read-only."""
    command = ["bwrap", "--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not config.network:
        command.append("--unshare-net")
    if not as_root:
        # no --disable-userns: it puts the worker in a second user namespace that does not own its mount namespace,
        # where it could not mount the scratch tmpfs; jobs are refused new user namespaces by a seccomp filter
        # (`system.user_namespace_filter`), whoever runs the pool
        command += ["--unshare-user", "--cap-add", MOUNT_CAP]
    command += ["--die-with-parent", "--new-session", "--hostname", "sandbox", "--clearenv"]
    for name, value in BASE_ENV.items():
        command += ["--setenv", name, value]
    made: set[str] = set()
    for name in ("bin", "lib", "lib32", "lib64", "libx32", "sbin"):
        host = f"/{name}"
        if os.path.islink(host):
            command += ["--symlink", os.readlink(host), host]
            made.add(host)
    for source, target in binds.items():
        for parent in _parents(target):
            if parent not in made:
                command += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        command += ["--ro-bind", source, target]
        made.add(target)
    size = str(config.tmp_size_mb * 1024 * 1024)
    command += ["--proc", "/proc", "--dev", "/dev"]
    command += ["--perms", "1777", "--size", size, "--tmpfs", "/tmp"]
    command += ["--perms", "1777", "--size", size, "--tmpfs", "/dev/shm"]
    command += ["--remount-ro", "/", "--chdir", JOB_DIR]
    if as_root:
        command += ["--cap-drop", "ALL"]
        for cap in (*WORKER_CAPS, MOUNT_CAP):
            command += ["--cap-add", cap]
    return [*command, "--"]


def _interpreter_binds() -> tuple[dict[str, str], list[str]]:
    """Host paths to bind (at the same place, unless under a place the boundary mounts afresh), and their roots."""
    roots = ["/usr"]
    for name in ("bin", "lib", "lib32", "lib64", "libx32", "sbin"):
        host = f"/{name}"
        if os.path.isdir(host) and not os.path.islink(host):
            roots.append(host)
    prefix = os.path.realpath(sys.base_prefix)
    if not _under(prefix, roots):
        roots.append(prefix)
    for site_dir in _site_dirs():
        if not _under(site_dir, roots):
            roots.append(site_dir)
    executable = os.path.realpath(sys.executable)
    if not _under(executable, roots):
        roots.append(os.path.dirname(executable))
    return {root: _target(root) for root in roots}, roots


def _inner_sys_path(binds: dict[str, str]) -> tuple[str, ...]:
    path = [INNER_ROOT]
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        inside = _translate(real, binds) if real and os.path.isdir(real) else None
        if inside is not None and not inside.startswith(f"{INNER_ROOT}/kt_train"):
            path.append(inside)
    return tuple(dict.fromkeys(path))


@functools.cache
def _bwrap_works(as_root: bool) -> str:
    """'' if bubblewrap can make the boundary here, else why not (one line)."""
    import shutil
    import subprocess

    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    binds, _ = _interpreter_binds()
    interpreter = _translate(os.path.realpath(sys.executable), binds) or sys.executable
    probe = [*_bwrap_command(SandboxConfig(), binds, as_root), interpreter, "-I", "-S", "-c", ""]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap failed to start: {exc}"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return f"bubblewrap failed: {lines[-1] if lines else f'exit status {done.returncode}'}"
    return ""


def isolation(config: SandboxConfig, preload: tuple[str, ...] = ()) -> Isolation:
    """The boundary workers of a pool with `config` and `preload` run in; raises SandboxUnavailable if none can be
    made and `config.allow_weak_isolation` is off."""
    as_root = os.geteuid() == 0
    problem = _bwrap_works(as_root)
    if problem:
        if not config.allow_weak_isolation:
            raise SandboxUnavailable(
                f"the sandbox cannot isolate jobs here: {problem}; install bubblewrap (apt-get install bubblewrap) "
                "or pass allow_weak_isolation / --allow-weak-isolation to run with process limits only"
            )
        package = _package_dir()
        return Isolation("weak", sys_path=(package, *(p for p in sys.path if p)), reason=problem)
    binds, roots = _interpreter_binds()
    package = _package_dir()
    binds[os.path.join(package, "kt_train", "__init__.py")] = f"{INNER_ROOT}/kt_train/__init__.py"
    binds[os.path.join(package, "kt_train", "sandbox")] = f"{INNER_ROOT}/kt_train/sandbox"
    binds.update(_preload_binds(preload, roots))
    namespaces = ("mount", "pid", "ipc", "uts", *(() if config.network else ("network",)))
    return Isolation(
        "bubblewrap",
        prefix=tuple(_bwrap_command(config, binds, as_root)),
        sys_path=_inner_sys_path(binds),
        interpreter=_translate(os.path.realpath(sys.executable), binds) or sys.executable,
        visible=tuple(binds),
        namespaces=(*namespaces, *(() if as_root else ("user",))),
        binds=binds,
    )


__all__ = ["BASE_ENV", "INNER_ROOT", "JOB_DIR", "SCRATCH_DIRS", "Isolation", "SandboxUnavailable", "isolation"]
