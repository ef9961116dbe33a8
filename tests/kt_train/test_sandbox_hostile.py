"""The sandbox attacked as a hostile model would: reads of canaries planted on the host (files, environment variables,
a key in the caller's session keyring, a process whose argv and environment hold them), writes everywhere,
leftovers, IPC, forged verdicts, floods, limits of the job as a whole, copying between KT candidates, the KT reward's
cheats, the refusal without bubblewrap and `kt sandbox run --explain`.

Every case asserts the verdict and what the attempt ran into (jobs print `tried` before it, and then the error they
got), that no canary comes back, that nothing persisted (the next job of the same worker sees only pids 1, 2 and
itself, empty /tmp and /dev/shm, no SysV IPC object, no key; on the host: no file named after this run, no new
`kt-sandbox-*` entry, no process left below this one or in a closed pool's pid namespace) and bounded time."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from textwrap import indent
from typing import Any

import pytest

from kt_train.sandbox import (
    UID_BASE,
    SandboxConfig,
    SandboxJob,
    SandboxPool,
    SandboxResult,
    SandboxUnavailable,
    Verdict,
    call_function,
    run_code,
)
from kt_train.sandbox.boundary import _target  # where a host path is bound inside

TOKEN = secrets.token_hex(16)  # the secret in every canary; never part of a path or of a job's code
NAME = secrets.token_hex(6)  # names the canaries' paths and whatever a job tries to create
MARK = f"hostile-{NAME}"
FAST = SandboxConfig(timeout_s=1.0, wall_timeout_s=1.5, grace_s=0.2)
SLACK_S = 2.0
REPO = Path(__file__).resolve().parents[2]
HOME = Path.home()
KEY_DIR = HOME / f".kt-hostile-canary-{NAME}"
KEY_FILE = KEY_DIR / "id_key"
CACHE_DIR = HOME / ".cache" / "kt-train"
CACHE_FILE = CACHE_DIR / f"hostile-canary-{NAME}.txt"
DATASET = Path("/tmp") / f"kt-hostile-dataset-{NAME}" / "items.jsonl"
HOST_SOCKET = Path("/tmp") / f"kt-canary-socket-{NAME}"
ABSTRACT = f"\0kt-hostile-{NAME}"
SECRET_ENV, SEQUENCE_ENV = "KT_HOSTILE_SECRET", "KT_HOSTILE_SEQUENCE"
KEY_DESCRIPTION = f"kt-hostile-{NAME}"
SITE = os.path.realpath(next(p for p in sys.path if p.endswith("site-packages")))
SITE_INSIDE = _target(SITE)  # where the boundary binds it (elsewhere when it lives under /tmp)


def _under_own_mounts(path: str) -> bool:
    """Below a place the boundary mounts afresh (a checkout in /tmp): such a host path does not exist inside."""
    return any(path.startswith(d + "/") for d in ("/tmp", "/var/tmp", "/dev", "/proc"))


PREFIX = os.path.realpath(sys.base_prefix)
SEQUENCE = [1000 + secrets.randbelow(9000) for _ in range(12)]  # what KT cheaters try to copy; in the canaries too
SYSCALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(os.uname().machine)  # add_key, keyctl
ADD_KEY, KEYCTL = SYSCALLS or (-1, -1)
IS_ROOT = os.geteuid() == 0
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or not IS_ROOT, reason="the hostile suite needs bubblewrap and root"
)


# ----- the host side: canaries, keyrings, processes, files


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _keyctl(*args: int) -> int:
    assert SYSCALLS is not None
    return int(_libc().syscall(ctypes.c_long(SYSCALLS[1]), *(ctypes.c_long(a) for a in args)))


def _add_key(description: str, payload: bytes, keyring: int) -> int:
    assert SYSCALLS is not None
    call = _libc().syscall
    return int(call(ctypes.c_long(SYSCALLS[0]), b"user", description.encode(), payload, len(payload), keyring))


def _stat_fields(pid: str) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _descendants(root: int) -> set[int]:
    """Every living process below `root` (zombies excluded)."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        fields = _stat_fields(name) if name.isdigit() else None
        if fields and fields[0] != "Z":
            parents[int(name)] = int(fields[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _pid_namespace(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _pool_namespaces(pool: SandboxPool) -> set[str]:
    """The pid namespaces of a pool's workers (the processes below its bubblewrap processes, not in this one's)."""
    own = _pid_namespace("self")
    below = set().union(*(_descendants(worker.process.pid) for worker in pool._workers))
    return {ns for pid in below if (ns := _pid_namespace(pid)) and ns != own}


def _processes_in(namespaces: set[str]) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        fields = _stat_fields(name) if name.isdigit() else None
        if fields and fields[0] != "Z" and _pid_namespace(name) in namespaces:
            found.append(int(name))
    return found


def _host_processes() -> int:
    return sum(1 for p in os.listdir("/proc") if p.isdigit())


def _describe(pid: int) -> str:
    """A process as `pid name state ppid uid: cmdline` (for a failure message)."""
    try:
        status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:120].decode(errors="replace")
    except (OSError, ValueError):
        return f"{pid} (gone)"
    fields = [status.get(key, "?") for key in ("Name", "State", "PPid", "Uid")]
    return f"{pid} {fields[0]} {fields[1]} ppid {fields[2]} uid {fields[3]}: {cmdline}"


def _wait(condition: Callable[[], bool], seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _host_marks() -> list[str]:
    """Whatever is named after this run (or holds the token in its name) where a job might have written."""
    found = []
    for directory in (*SCRATCH, "/", "/opt", str(HOME), str(REPO), SITE, str(CACHE_DIR)):
        with_names = os.listdir(directory) if os.path.isdir(directory) else []
        found += [os.path.join(directory, n) for n in with_names if MARK in n or TOKEN in n]
    return found


def _sandbox_scratch() -> set[str]:
    """`kt-sandbox-*` entries (weak isolation's job directories, cgroups are elsewhere) in the host's scratch."""
    return {os.path.join(d, n) for d in ("/tmp", "/dev/shm") for n in os.listdir(d) if n.startswith("kt-sandbox-")}


def _key_users() -> set[int]:
    """The uids that own keys on the host."""
    with open("/proc/key-users") as f:
        return {int(line.split(":")[0]) for line in f if line.strip()}


@pytest.fixture(scope="module")
def canaries() -> Iterator[dict[str, Any]]:
    """Plant the secrets on the host before any worker starts; remove them afterwards."""
    KEY_DIR.mkdir(mode=0o700)
    KEY_DIR.chmod(0o700)
    KEY_FILE.write_text(TOKEN)
    KEY_FILE.chmod(0o600)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    CACHE_FILE.write_text(json.dumps({"token": TOKEN, "sequence": SEQUENCE}))
    DATASET.parent.mkdir()
    DATASET.write_text(json.dumps({"id": TOKEN, "sequence": SEQUENCE}) + "\n")
    os.environ[SECRET_ENV] = TOKEN
    os.environ[SEQUENCE_ENV] = json.dumps(SEQUENCE)
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(HOST_SOCKET))
    HOST_SOCKET.chmod(0o777)
    unix.listen()
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(ABSTRACT)
    abstract.listen()
    tcp = socket.create_server(("127.0.0.1", 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    # a host process whose argv and environment hold the secrets (a dataset loader, say)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)", TOKEN, json.dumps(SEQUENCE)])
    payload = json.dumps({"token": TOKEN, "sequence": SEQUENCE}).encode()
    key = _add_key(KEY_DESCRIPTION, payload, -3) if SYSCALLS else -1  # the caller's session keyring
    try:
        yield {"port": tcp.getsockname()[1], "udp": udp, "holder": holder.pid, "key": key}
    finally:
        holder.kill()
        holder.wait()
        for sock in (unix, abstract, tcp, udp):
            sock.close()
        if key > 0:
            _keyctl(21, key)  # KEYCTL_INVALIDATE
        HOST_SOCKET.unlink(missing_ok=True)
        os.environ.pop(SECRET_ENV, None)
        os.environ.pop(SEQUENCE_ENV, None)
        shutil.rmtree(KEY_DIR, ignore_errors=True)
        CACHE_FILE.unlink(missing_ok=True)
        shutil.rmtree(DATASET.parent, ignore_errors=True)


@pytest.fixture(autouse=True)
def host_unchanged(canaries: dict[str, Any]) -> Iterator[None]:
    """After each case: no process left below this one, nothing named after this run on the host, no new
    `kt-sandbox-*` entry in its /tmp or /dev/shm."""
    below, scratch = _descendants(os.getpid()), _sandbox_scratch()
    yield
    assert _wait(lambda: _descendants(os.getpid()) <= below), [
        _describe(pid) for pid in _descendants(os.getpid()) - below
    ]
    assert _host_marks() == []
    assert _wait(lambda: _sandbox_scratch() <= scratch, 1.0), _sandbox_scratch() - scratch


@pytest.fixture(scope="module")
def pool(canaries: dict[str, Any]) -> Iterator[SandboxPool]:
    """One worker: every job runs after the previous one in the same boundary. Closing it leaves no process."""
    shared = SandboxPool(workers=1, config=FAST)
    try:
        assert shared.run("pass").verdict == Verdict.OK  # its worker is up before any case counts processes
        yield shared
    finally:
        namespaces = _pool_namespaces(shared)
        shared.close()
    assert _wait(lambda: not _processes_in(namespaces)), _processes_in(namespaces)


# ----- the checks every case makes


def _leaks(text: str) -> list[str]:
    sequence = (", ".join(map(str, SEQUENCE)), ",".join(map(str, SEQUENCE)))
    return [s for s in (TOKEN, *sequence) if s in text]


def _no_leak(result: SandboxResult) -> None:
    text = result.stdout + result.stderr + json.dumps(result.return_value)
    assert _leaks(text + str(result.error_message) + str(result.error_type)) == [], result


def _run(pool: SandboxPool, job: SandboxJob | str, config: SandboxConfig = FAST) -> SandboxResult:
    """Run a job: bounded in time (the supervisor's duration and the caller's wall clock), nothing leaked."""
    start = time.monotonic()
    result = pool.run(job)
    wall = time.monotonic() - start
    limit = config.wall_limit_s + config.grace_s + SLACK_S
    assert result.duration_s < limit and wall < limit + 1.0, (result.duration_s, wall, result)
    _no_leak(result)
    return result


PROBE = (
    "import json, os\n"
    "keys = [line for line in open('/proc/keys') if 'hostile' in line]\n"
    "print(json.dumps({'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), 'me': os.getpid(),\n"
    "    'tmp': os.listdir('/tmp'), 'shm': os.listdir('/dev/shm'), 'keys': keys,\n"
    "    'ipc': [len(open(f'/proc/sysvipc/{k}').read().splitlines()) - 1 for k in ('shm', 'msg', 'sem')]}))"
)


def _clean_after(pool: SandboxPool) -> None:
    """The next job of the same worker sees only init, the worker and itself, empty scratch, no IPC, no key."""
    result = _run(pool, PROBE)
    assert result.verdict == Verdict.OK, result
    seen = json.loads(result.stdout)
    assert seen["pids"] == [1, 2, seen["me"]], seen
    assert (seen["tmp"], seen["shm"], seen["ipc"], seen["keys"]) == ([], [], [0, 0, 0], []), seen


@dataclass(frozen=True)
class Attempt:
    """A hostile job and what it must run into: its verdict, the error it gets (an error verdict) or a text it
    prints after the attempt; `check` for anything else."""

    code: str
    verdict: Verdict
    error_type: str | None = None
    stdout: str | None = None
    check: Callable[[SandboxResult], None] | None = None


def _attempt(pool: SandboxPool, attempt: Attempt, fill: dict[str, Any] | None = None) -> SandboxResult:
    code = attempt.code
    for key, value in (fill or {}).items():
        code = code.replace(f"@{key}@", str(value))
    result = _run(pool, f"import errno, os, sys, time\nprint('tried', flush=True)\n{code}")
    assert result.stdout.startswith("tried"), result  # the job ran up to its attempt
    assert result.verdict == attempt.verdict, result
    if attempt.error_type is not None:
        assert result.error_type == attempt.error_type, result
    if attempt.stdout is not None:
        assert attempt.stdout in result.stdout, result
    if attempt.check is not None:
        attempt.check(result)
    return result


def _refused(code: str) -> str:
    """`code`, printing `refused <errno name>` where it raises OSError (else `done`)."""
    return (
        f"try:\n{indent(code, '    ')}\n    print('done')\n"
        "except OSError as exc:\n    print('refused', errno.errorcode[exc.errno])"
    )


def _token_finder(var: str) -> str:
    """Code adding to `hits` the occurrences of TOKEN in the bytes `var`, without TOKEN itself in the job's memory
    (found by its first 8 characters, the rest compared masked)."""
    masked = bytes(ord(c) ^ 85 for c in TOKEN)
    head = TOKEN[:8].encode()
    return (
        f"i = {var}.find({head!r})\n"
        "while i >= 0:\n"
        f"    hits += bytes(x ^ 85 for x in {var}[i : i + {len(TOKEN)}]) == {masked!r}\n"
        f"    i = {var}.find({head!r}, i + 1)\n"
    )


def _scanned(result: SandboxResult) -> None:
    """The job scanned more than 10 MB of its own memory and found no canary."""
    words = result.stdout.split()
    assert "hits" in words and words[words.index("hits") + 1] == "0", result
    assert int(words[words.index("scanned") + 1]) > 10**7, result


# ----- 1. reads of the host


def _read(path: Path | str) -> str:
    return f"print(open({str(path)!r}).read())"


def _home_listing(result: SandboxResult) -> None:
    """HOME holds at most the parents of the interpreter's bound directories (e.g. .pyenv), nothing planted."""
    roots = [Path(r) for r in (PREFIX, SITE) if Path(r).is_relative_to(HOME)]
    listed = json.loads(result.stdout.splitlines()[-1])
    assert set(listed) <= {r.relative_to(HOME).parts[0] for r in roots}, listed


def _environ_of_all(result: SandboxResult) -> None:
    """Three processes: the worker's fork server (pid 1) and supervisor (pid 2), whose environments are refused and
    whose argv holds nothing, and the job itself."""
    seen = json.loads(result.stdout.splitlines()[-1])
    assert [s[:2] for s in seen[:2]] == [[1, "denied"], [2, "denied"]] and seen[2][1] == "own", seen
    assert all(" -I -S -c " in s[2] for s in seen[:2]), seen


def _walked(result: SandboxResult) -> None:
    seen = json.loads(result.stdout.splitlines()[-1])
    assert seen["named"] == [] and seen["hits"] == 0, seen
    assert seen["entries"] > 50 and seen["read"] > 10, seen


WALK = (
    "import json, stat\n"
    f"skip = {{'/proc', '/usr', {PREFIX!r}, {SITE_INSIDE!r}}}  # public code, bound read-only (mount table case)\n"
    "named, hits, entries, read = [], 0, 0, 0\n"
    "for root, dirs, files in os.walk('/'):\n"
    "    dirs[:] = [d for d in dirs if os.path.join(root, d) not in skip]\n"
    "    for name in dirs + files:\n"
    "        entries += 1\n"
    "        path = os.path.join(root, name)\n"
    f"        if {NAME!r} in name or 'canary' in name or 'id_key' in name or name == '.cache':\n"
    "            named.append(path)\n"
    "        try:\n"
    "            info = os.stat(path, follow_symlinks=False)\n"
    "            if stat.S_ISREG(info.st_mode) and info.st_size < 1 << 20:\n"
    "                data = open(path, 'rb').read()\n"
    "                read += 1\n"
    f"{indent(_token_finder('data'), ' ' * 16)}"
    "        except OSError:\n"
    "            pass\n"
    "print(json.dumps({'named': named, 'hits': hits, 'entries': entries, 'read': read}))"
)


def _mounts(result: SandboxResult) -> None:
    """Writable: only /tmp, /dev/shm (tmpfs), /proc, the /dev tmpfs (EACCES to a job) and its device nodes; every
    other bind is read-only and public code."""
    mounts = json.loads(result.stdout.splitlines()[-1])
    writable = {point for point, options, _ in mounts if "rw" in options.split(",")}
    devices = {f"/dev/{name}" for name in ("null", "zero", "full", "random", "urandom", "tty", "pts")}
    assert writable <= {"/tmp", "/dev/shm", "/proc", "/dev", *devices}, mounts
    bound = {point for point, _, source in mounts if source not in ("/", "/newroot")}
    for point in bound - {"/proc", "/dev", "/tmp", "/dev/shm", "/dev/pts", "/dev/mqueue"}:
        assert point.startswith(("/usr", "/dev/", "/proc/", "/opt/kt-train/", PREFIX, SITE)), mounts


MOUNTS = (
    "import json\nrows = [line.split() for line in open('/proc/self/mountinfo')]\n"
    "print(json.dumps([(r[4], r[5], r[3]) for r in rows]))"
)
PROC_ENVIRON = (
    "import json\nseen = []\n"
    "for p in sorted(int(p) for p in os.listdir('/proc') if p.isdigit()):\n"
    "    cmdline = open(f'/proc/{p}/cmdline').read().replace('\\0', ' ')\n"
    "    try:\n"
    "        environ = open(f'/proc/{p}/environ').read()\n"
    "        seen.append((p, 'own' if p == os.getpid() else 'READ: ' + environ, cmdline))\n"
    "    except PermissionError:\n"
    "        seen.append((p, 'denied', cmdline))\n"
    "print(json.dumps(seen))"
)
MEMORY_BY_CTYPES = (
    "import ctypes\nhits = scanned = 0\n"
    "for line in list(open('/proc/self/maps')):\n"
    "    span, perms = line.split()[:2]\n"
    "    if not perms.startswith('r') or '[v' in line:\n"
    "        continue\n"
    "    start, end = (int(x, 16) for x in span.split('-'))\n"
    "    data = ctypes.string_at(start, end - start)\n"
    "    scanned += len(data)\n"
    f"{indent(_token_finder('data'), '    ')}"
    "print('memory hits', hits, 'scanned', scanned)"
)
MEMORY_BY_PROC = (
    "hits = scanned = 0\nmemory = open('/proc/self/mem', 'rb', buffering=0)\n"
    "for line in list(open('/proc/self/maps')):\n"
    "    span, perms = line.split()[:2]\n"
    "    start, end = (int(x, 16) for x in span.split('-'))\n"
    "    try:\n"
    "        memory.seek(start)\n"
    "        data = memory.read(end - start)\n"
    "    except (OSError, OverflowError, ValueError):\n"
    "        continue\n"
    "    scanned += len(data)\n"
    f"{indent(_token_finder('data'), '    ')}"
    "print('memory hits', hits, 'scanned', scanned)"
)
KEYRING_READ = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nL = ctypes.c_long\n"
    f"found = libc.syscall(L({KEYCTL}), L(10), L(-3), b'user', {KEY_DESCRIPTION.encode()!r}, "
    "L(0))\nsearch_errno = ctypes.get_errno()\nbuffer = ctypes.create_string_buffer(4096)\n"
    f"size = libc.syscall(L({KEYCTL}), L(11), L(@KEY@), buffer, L(4096))\n"
    "print('search', found, search_errno, 'read', size, ctypes.get_errno())\n"
    "print(buffer.raw[: max(size, 0)])"
)
ENVIRONMENT = "['HOME', 'LANG', 'PATH', 'TMPDIR']"
DUMPABLE = "import ctypes\nctypes.CDLL(None).prctl(4, 1, 0, 0, 0)\n"  # PR_SET_DUMPABLE: its own /proc files again


def _keyring_unread(result: SandboxResult) -> None:
    """The search of the job's session keyring (the worker's, sealed against its jobs) is refused (EACCES) or finds
    nothing (ENOKEY), and the caller's key cannot be read by its id."""
    words = result.stdout.split()
    found, search_errno = int(words[words.index("search") + 1]), int(words[words.index("search") + 2])
    read = int(words[words.index("read") + 1])
    assert found == -1 and search_errno in (errno.EACCES, errno.ENOKEY) and read == -1, result


def _exec_environment(result: SandboxResult) -> None:
    """/proc/self/environ is the environment the worker was started with (bubblewrap's): nothing of the caller."""
    names = json.loads(result.stdout.splitlines()[-1])
    assert set(names) <= {"HOME", "LANG", "PATH", "PWD", "TMPDIR"} and "PATH" in names, names


READS = {
    "key file": Attempt(_read(KEY_FILE), Verdict.ERROR, "FileNotFoundError"),
    "key directory": Attempt(f"print(os.listdir({str(KEY_DIR)!r}))", Verdict.ERROR, "FileNotFoundError"),
    "/etc/shadow": Attempt(_read("/etc/shadow"), Verdict.ERROR, "FileNotFoundError"),
    "/etc/passwd": Attempt(_read("/etc/passwd"), Verdict.ERROR, "FileNotFoundError"),
    "checkout .git/config": Attempt(_read(REPO / ".git" / "config"), Verdict.ERROR, "FileNotFoundError"),
    "checkout pyproject.toml": Attempt(_read(REPO / "pyproject.toml"), Verdict.ERROR, "FileNotFoundError"),
    "~/.cache/kt-train": Attempt(f"print(os.listdir({str(CACHE_DIR)!r}))", Verdict.ERROR, "FileNotFoundError"),
    "cached corpus": Attempt(_read(CACHE_FILE), Verdict.ERROR, "FileNotFoundError"),
    "dataset file": Attempt(_read(DATASET), Verdict.ERROR, "FileNotFoundError"),
    "/home": Attempt("print(os.listdir('/home'))", Verdict.ERROR, "FileNotFoundError"),
    "home directory": Attempt(
        f"import json\nprint(json.dumps(os.listdir({str(HOME)!r})))", Verdict.OK, check=_home_listing
    ),
    "walk the filesystem": Attempt(WALK, Verdict.OK, check=_walked),
    "mount table": Attempt(MOUNTS, Verdict.OK, check=_mounts),
    "/proc/1/environ": Attempt(_read("/proc/1/environ"), Verdict.ERROR, "PermissionError"),
    "/proc/2/environ": Attempt(_read("/proc/2/environ"), Verdict.ERROR, "PermissionError"),
    "/proc/2/mem": Attempt("open('/proc/2/mem', 'rb').read(64)", Verdict.ERROR, "PermissionError"),
    "/proc/self/environ, not dumpable": Attempt(_read("/proc/self/environ"), Verdict.ERROR, "PermissionError"),
    "/proc/self/environ, made dumpable": Attempt(
        DUMPABLE + "import json\n"
        "print(json.dumps(sorted(v.split('=')[0] for v in open('/proc/self/environ').read().split('\\0') if v)))",
        Verdict.OK,
        check=_exec_environment,
    ),
    "os.environ": Attempt("print(sorted(os.environ))", Verdict.OK, stdout=ENVIRONMENT),
    "environ and cmdline of every process": Attempt(DUMPABLE + PROC_ENVIRON, Verdict.OK, check=_environ_of_all),
    "the caller by its host pid": Attempt(
        "print(open('/proc/@CALLER@/cmdline').read(), open('/proc/@CALLER@/environ').read())",
        Verdict.ERROR,
        "FileNotFoundError",
    ),
    "the argv holder by its host pid": Attempt(
        "print(open('/proc/@HOLDER@/cmdline').read())", Verdict.ERROR, "FileNotFoundError"
    ),
    "own memory via /proc/self/mem": Attempt(DUMPABLE + MEMORY_BY_PROC, Verdict.OK, check=_scanned),
    "own memory via ctypes": Attempt(MEMORY_BY_CTYPES, Verdict.OK, check=_scanned),
    "the caller's session keyring": Attempt(KEYRING_READ, Verdict.OK, check=_keyring_unread),
    "/proc/keys": Attempt(
        f"text = open('/proc/keys').read()\nprint('listed', {KEY_DESCRIPTION!r} in text)",
        Verdict.OK,
        stdout="listed False",
    ),
}


@pytest.mark.parametrize("attempt", READS.values(), ids=READS.keys())
def test_a_job_reads_nothing_of_the_host(pool: SandboxPool, canaries: dict[str, Any], attempt: Attempt) -> None:
    if "@KEY@" in attempt.code and canaries["key"] <= 0:
        pytest.skip("no keyring here")
    fill = {"KEY": canaries["key"], "CALLER": os.getpid(), "HOLDER": canaries["holder"]}
    _attempt(pool, attempt, fill)
    _clean_after(pool)


# ----- 2. writes everywhere


def _write(directory: str) -> Attempt:
    allowed = directory in ("/tmp", "/dev/shm", ".")
    code = f"with open(os.path.join({directory!r}, {MARK!r}), 'w') as f:\n    f.write('x')"
    expected = {"/var/tmp": "ENOENT", "/dev": "EACCES", "/proc": "ENOENT", "/home": "ENOENT", "/etc": "ENOENT"}
    if _under_own_mounts(directory):  # a checkout or venv under /tmp: not there at all inside (bound elsewhere)
        expected[directory] = "ENOENT"
    return Attempt(
        _refused(code), Verdict.OK, stdout="done" if allowed else f"refused {expected.get(directory, 'EROFS')}"
    )


WRITE_DIRS = {
    "/tmp": "/tmp",
    "/dev/shm": "/dev/shm",
    "cwd": ".",
    "/var/tmp": "/var/tmp",
    "/": "/",
    "/usr": "/usr",
    "/usr/lib": "/usr/lib",
    "site-packages": SITE,
    "/opt/kt-train": "/opt/kt-train",
    "the sandbox package": "/opt/kt-train/kt_train/sandbox",
    "home": str(HOME),
    "checkout": str(REPO),
    "/dev": "/dev",
    "/proc": "/proc",
    "/home": "/home",
    "/etc": "/etc",
}
WRITES = {name: _write(directory) for name, directory in WRITE_DIRS.items()}
WRITES |= {
    "append to the sandbox's job.py": Attempt(
        _refused("open('/opt/kt-train/kt_train/sandbox/job.py', 'a').write('x = 1')"),
        Verdict.OK,
        stdout="refused EACCES",
    ),
    "hostname via /proc/sys": Attempt(
        _refused("open('/proc/sys/kernel/hostname', 'w').write('owned')"), Verdict.OK, stdout="refused EACCES"
    ),
    "unkillable by the OOM killer": Attempt(
        _refused("open('/proc/self/oom_score_adj', 'w').write('-1000')"), Verdict.OK, stdout="refused EACCES"
    ),
    "fill /dev/shm": Attempt(
        _refused(f"for i in range(10):\n    open(f'/dev/shm/{MARK}-{{i}}', 'wb').write(bytes(15 << 20))"),
        Verdict.OK,
        stdout="refused ENOSPC",
    ),
    "a file over file_size_mb": Attempt(
        _refused(f"open('/tmp/{MARK}', 'wb').write(bytes(17 << 20))"), Verdict.OK, stdout="refused EFBIG"
    ),
}


@pytest.mark.parametrize("attempt", WRITES.values(), ids=WRITES.keys())
def test_writes_stay_inside_and_vanish(pool: SandboxPool, attempt: Attempt) -> None:
    _attempt(pool, attempt)
    _clean_after(pool)  # what a job wrote in /tmp or /dev/shm is gone for the next one; the host never sees it


# ----- 3. leftovers

DAEMONS = {
    "setsid daemon": "if os.fork() == 0:\n    os.setsid()\n    time.sleep(100)\ntime.sleep(0.1)\nprint('left')",
    "double fork": "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(100)\n"
    "    os._exit(0)\ntime.sleep(0.1)\nprint('left')",
    "exec /bin/sh": "os.execv('/bin/sh', ['sh', '-c', 'sleep 100 & echo left'])",
    "stopped child": "import signal\nif os.fork() == 0:\n    os.kill(os.getpid(), signal.SIGSTOP)\n"
    "time.sleep(0.1)\nprint('left')",
    "file-writing daemon": "if os.fork() == 0:\n    os.setsid()\n    for i in range(10**6):\n"
    f"        open(f'/tmp/{MARK}-{{i}}', 'w').close()\n        open(f'/dev/shm/{MARK}-{{i}}', 'w').close()\n"
    "        time.sleep(0.001)\ntime.sleep(0.1)\nprint('left')",
    "spinning threads": "import threading\ndef spin():\n    while True:\n        pass\nfor _ in range(4):\n"
    "    threading.Thread(target=spin, daemon=True).start()\nprint('left')",
}
LEFTOVERS = {name: Attempt(code, Verdict.OK, stdout="left") for name, code in DAEMONS.items()}
LEFTOVERS |= {
    "1500 nested directories": Attempt(
        "for _ in range(1500):\n    os.mkdir('d')\n    os.chdir('d')\nprint('deep', os.getcwd().count('/'))",
        Verdict.OK,
        stdout="deep 1501",
    ),
    "renamed cwd": Attempt(
        "os.mkdir('/tmp/a')\nos.chdir('/tmp/a')\nos.rename('/tmp/a', '/tmp/b')\nopen('x', 'w').write('1')\n"
        "print(os.listdir('/tmp/b'))",
        Verdict.OK,
        stdout="['x']",
    ),
    "chmod 000 directories": Attempt(
        "os.makedirs('/tmp/locked/in')\nopen('/tmp/locked/in/f', 'w').close()\nos.chmod('/tmp/locked/in', 0)\n"
        "os.chmod('/tmp/locked', 0)\nos.makedirs('/dev/shm/locked')\nos.chmod('/dev/shm/locked', 0)\nprint('locked')",
        Verdict.OK,
        stdout="locked",
    ),
    "fifo, socket, symlink to /": Attempt(
        "import socket\nos.mkfifo('/tmp/fifo')\nsocket.socket(socket.AF_UNIX).bind('/dev/shm/s')\n"
        "os.symlink('/', '/tmp/root')\nos.symlink('/opt/kt-train', '/dev/shm/package')\nprint('made')",
        Verdict.OK,
        stdout="made",
    ),
    "rename /tmp": Attempt(_refused("os.rename('/tmp', '/tmp2')"), Verdict.OK, stdout="refused EROFS"),
    "children at the timeout": Attempt(
        "for _ in range(5):\n    os.fork() or time.sleep(100)\ntime.sleep(100)", Verdict.TIMEOUT
    ),
    "ignores SIGTERM at the timeout": Attempt(
        "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nos.fork()\nwhile True:\n    pass",
        Verdict.TIMEOUT,
    ),
}


@pytest.mark.parametrize("attempt", LEFTOVERS.values(), ids=LEFTOVERS.keys())
def test_nothing_is_left_behind(pool: SandboxPool, attempt: Attempt) -> None:
    _attempt(pool, attempt)
    _clean_after(pool)
    if "/opt/kt-train" in attempt.code:  # emptying /dev/shm removed the link, not what it points to
        listed = _run(pool, "import os\nprint(sorted(os.listdir('/opt/kt-train')))").stdout
        assert listed in ("['kt_train']\n", "['host', 'kt_train']\n")  # host: a venv under /tmp, bound there


def _host_pids() -> set[int]:
    return {int(p) for p in os.listdir("/proc") if p.isdigit()}


def test_the_host_is_back_to_its_processes_when_the_pool_closes(canaries: dict[str, Any]) -> None:
    before = _host_pids()
    with SandboxPool(workers=2, config=FAST) as own:
        jobs = [f"import os, time\n{code}" for code in DAEMONS.values()]
        jobs.append("import os, time\nfor _ in range(5):\n    os.fork() or time.sleep(100)\ntime.sleep(100)")
        results = own.map(jobs)
        namespaces = _pool_namespaces(own)
        assert len(namespaces) == 2
    assert [r.verdict for r in results] == [Verdict.OK] * len(DAEMONS) + [Verdict.TIMEOUT]
    assert _wait(lambda: not _processes_in(namespaces)), _processes_in(namespaces)
    # the host's process count is back to where it was within 2 s; where the machine's other users started
    # processes meanwhile, none of the new ones may be ours (below this process or in the pool's namespaces)
    if not _wait(lambda: _host_processes() <= len(before)):
        new = _host_pids() - before
        ours = new & _descendants(os.getpid()) | {p for p in new if _pid_namespace(p) in namespaces}
        assert ours == set(), ours


# ----- 4. IPC


def _made(result: SandboxResult) -> None:
    assert int(result.stdout.split()[-1]) >= 0, result


SYSV_CALL = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
GIVE_AWAY = (
    SYSV_CALL + "q = libc.msgget(0, 0o1666)\n"
    "message = ctypes.create_string_buffer(8 + 64)\nctypes.memmove(message, (1).to_bytes(8, 'little'), 8)\n"
    f"ctypes.memmove(ctypes.addressof(message) + 8, {MARK.encode()!r}, {len(MARK)})\n"
    "assert libc.msgsnd(q, message, 64, 0) == 0\n"
    "info = ctypes.create_string_buffer(256)\nassert libc.msgctl(q, 2, info) == 0\n"  # IPC_STAT
    "ctypes.memmove(ctypes.addressof(info) + 4, (@OWNER@).to_bytes(4, 'little'), 4)\n"  # ipc_perm.uid
    "print('given', libc.msgctl(q, 1, info), ctypes.get_errno())"  # IPC_SET
)
IPC = {
    "host unix socket": Attempt(
        f"import socket\nsocket.socket(socket.AF_UNIX).connect({str(HOST_SOCKET)!r})",
        Verdict.ERROR,
        "FileNotFoundError",
    ),
    "host abstract socket": Attempt(
        f"import socket\nsocket.socket(socket.AF_UNIX).connect({ABSTRACT!r})", Verdict.ERROR, "ConnectionRefusedError"
    ),
    "host TCP port": Attempt(  # the host listens there; the job's loopback is its own namespace's
        _refused("import socket\nsocket.create_connection(('127.0.0.1', @PORT@), timeout=0.5)"),
        Verdict.OK,
        stdout="refused ECONNREFUSED",
    ),
    "an outside address": Attempt(
        _refused("import socket\nsocket.create_connection(('10.255.255.1', 80), timeout=0.5)"),
        Verdict.OK,
        stdout="refused ENETUNREACH",
    ),
    "SysV shared memory": Attempt(SYSV_CALL + "print(libc.shmget(4242, 1 << 20, 0o1666))", Verdict.OK, check=_made),
    "SysV message queue": Attempt(SYSV_CALL + "print(libc.msgget(4242, 0o1666))", Verdict.OK, check=_made),
    "SysV semaphores": Attempt(SYSV_CALL + "print(libc.semget(4242, 4, 0o1666))", Verdict.OK, check=_made),
    "2000 message queues": Attempt(
        SYSV_CALL + "made = [libc.msgget(0, 0o1666) for _ in range(2000)]\nprint('made', sum(q >= 0 for q in made))",
        Verdict.OK,
        stdout="made 2000",
    ),
    "a queue given to root": Attempt(GIVE_AWAY.replace("@OWNER@", "0"), Verdict.OK, stdout="given 0 0"),
    "a queue given to another uid": Attempt(GIVE_AWAY.replace("@OWNER@", "4242"), Verdict.OK, stdout="given 0 0"),
    "POSIX message queue": Attempt(
        "import ctypes\nrt = ctypes.CDLL('librt.so.1', use_errno=True)\n"
        "print('mq', rt.mq_open(b'/kt-hostile', 0o100 | 2, 0o666, None), ctypes.get_errno())",
        Verdict.OK,
        stdout="mq -1 24",
    ),
    "kill init": Attempt("os.kill(1, 9)", Verdict.ERROR, "PermissionError"),
    "kill the worker": Attempt("os.kill(2, 9)", Verdict.ERROR, "PermissionError"),
    "signal the worker through a pidfd": Attempt(
        "import signal\nsignal.pidfd_send_signal(os.pidfd_open(2), 9)", Verdict.ERROR, "PermissionError"
    ),
    "setuid mount": Attempt(
        "import subprocess\nprint(subprocess.run(['mount', '-t', 'tmpfs', 'none', '/tmp'], capture_output=True, "
        "text=True).stderr, os.stat('/usr/bin/mount').st_mode & 0o4000)",
        Verdict.OK,
        stdout="must be superuser",
    ),
}
for _pid, _name in ((1, "init"), (2, "the worker"), ("@CALLER@", "the caller")):
    IPC[f"ptrace {_name}"] = Attempt(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        f"print('ptrace', libc.ptrace(16, {_pid}, 0, 0), ctypes.get_errno() in (1, 3))",  # EPERM, or ESRCH
        Verdict.OK,
        stdout="ptrace -1 True",
    )


@pytest.mark.parametrize("attempt", IPC.values(), ids=IPC.keys())
def test_no_ipc_escape(pool: SandboxPool, canaries: dict[str, Any], attempt: Attempt) -> None:
    _attempt(pool, attempt, {"PORT": canaries["port"], "CALLER": os.getpid()})
    _clean_after(pool)  # every SysV object the job made is gone


def test_a_datagram_to_a_host_port_never_arrives(pool: SandboxPool, canaries: dict[str, Any]) -> None:
    port = canaries["udp"].getsockname()[1]
    code = "import socket\nprint('tried', flush=True)\nsend = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    code += f"send.sendto({MARK.encode()!r}, ('127.0.0.1', {port}))\nprint('sent')"
    result = _run(pool, code)
    assert (result.verdict, result.stdout) == (Verdict.OK, "tried\nsent\n"), result  # on its namespace's loopback
    time.sleep(0.1)
    with pytest.raises(BlockingIOError):
        canaries["udp"].recv(4096)
    _clean_after(pool)


def test_kill_minus_one_kills_only_the_job_own_processes(pool: SandboxPool) -> None:
    worker = pool._workers[0].process.pid
    code = "import os, signal, time\nif os.fork() == 0:\n    time.sleep(100)\nprint('tried', flush=True)\n"
    code += "os.kill(-1, signal.SIGKILL)\nprint('survived')"
    result = _run(pool, code)
    assert (result.verdict, result.stdout) == (Verdict.OK, "tried\nsurvived\n"), result
    assert pool._workers[0].process.pid == worker  # the same worker: it was not hit
    _clean_after(pool)


KEYS_LEFT = (
    "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nL = ctypes.c_long\n"
    "def add(name, ring):\n"
    f"    return libc.syscall(L({ADD_KEY}), b'user', name, {TOKEN.encode()!r}, L(32), L(ring))\n"
    f"persistent = libc.syscall(L({KEYCTL}), L(22), L(-1), L(-3))\n"
    f"made = [add(b'{MARK}-' + n, r) for n, r in ((b'user', -4), (b'usersession', -5), (b'session', -3), "
    "(b'persistent', persistent))]\n"
    "print(os.getuid(), 'made', made)"
)
KEYS_FOUND = (
    "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nL = ctypes.c_long\n"
    f"keyctl = lambda *a: libc.syscall(L({KEYCTL}), *a)\n"
    "persistent = keyctl(L(22), L(-1), L(-3))\n"
    "found = [keyctl(L(10), L(ring), b'user', b'" + MARK + "-' + n, L(0)) for ring in (-4, -5, persistent) "
    "for n in (b'user', b'usersession', b'session', b'persistent')]\n"
    "buffer = ctypes.create_string_buffer(64)\n"
    "print(os.getuid(), 'found', [k for k in found if k > 0], [buffer.raw[: keyctl(L(11), L(k), buffer, L(64))] "
    "for k in found if k > 0])"
)


@pytest.mark.skipif(SYSCALLS is None, reason="keyctl numbers unknown here")
def test_keys_a_job_leaves_reach_no_later_job_of_its_uid_and_not_the_host(canaries: dict[str, Any]) -> None:
    """Keyrings of a uid are kernel objects outside every namespace: the worker invalidates them after the job."""
    with SandboxPool(workers=1, config=FAST) as own:
        left = _run(own, KEYS_LEFT)
        made = json.loads(left.stdout.split("made")[1])  # user, user-session, session, persistent keyrings
        assert left.verdict == Verdict.OK and -1 not in made[:2] + made[3:], left
        assert made[2] == -1, left  # the session keyring is the worker's, sealed: no job adds to it
        found = _run(own, KEYS_FOUND)  # the next job of the same worker runs as the same uid
    uid = int(left.stdout.split()[0])
    assert found.verdict == Verdict.OK and found.stdout == f"{uid} found [] []\n", (left, found)
    assert _wait(lambda: uid not in _key_users()), _key_users()  # nothing of the jobs' uid is left on the host


@pytest.mark.skipif(SYSCALLS is None, reason="keyctl numbers unknown here")
def test_jobs_running_at_once_in_two_workers_share_no_uid(canaries: dict[str, Any]) -> None:
    """'A uid of its own' per job: two workers' jobs run at the same time must not share per-uid kernel state (user
    keyrings, RLIMIT_NPROC counts). Here one adds a key to its user keyring while the other looks for it."""
    adder = (
        f"import ctypes, os, time\nlibc = ctypes.CDLL(None, use_errno=True)\nL = ctypes.c_long\n"
        f"libc.syscall(L({ADD_KEY}), b'user', b'{MARK}-live', {TOKEN.encode()!r}, L(32), L(-4))\n"
        "time.sleep(0.6)\nprint(os.getuid())"
    )
    looker = (
        f"import ctypes, os, time\nlibc = ctypes.CDLL(None, use_errno=True)\nL = ctypes.c_long\ntime.sleep(0.3)\n"
        f"print(os.getuid(), libc.syscall(L({KEYCTL}), L(10), L(-4), b'user', b'{MARK}-live', L(0)))"
    )
    padding = "\n#" + "x" * 20_000  # over the pool's pipelining size: one job per worker, both at once
    with SandboxPool(workers=2, config=FAST) as own:
        added, looked = own.map([adder + padding, looker + padding])
    assert added.verdict == looked.verdict == Verdict.OK, (added, looked)
    assert looked.stdout.split()[1] == "-1", (added, looked)  # the other job's key is not found
    assert added.stdout.split()[0] != looked.stdout.split()[0], (added, looked)


# ----- 5. forged verdicts

FAKE_OK = json.dumps({"verdict": "ok", "return_value": [1, 2, 3], "error_type": None})
NOT_REPORTED = "Exception", None  # what the caller makes of a report the job garbled or replaced
FORGERIES = {  # code, verdict, (error type, message) the caller reports
    "fake result, then raise": (
        f"os.write(3, {FAKE_OK!r}.encode())\nraise ValueError('real')",
        Verdict.ERROR,
        NOT_REPORTED,  # its own bytes spoil its own report
    ),
    "fake result, then SIGKILL": ("os.write(3, b'[1, 2, 3]')\nos.kill(os.getpid(), 9)", Verdict.KILLED, None),
    "fake result, then loop": ("os.write(3, b'[1, 2, 3]')\nwhile True:\n    pass", Verdict.TIMEOUT, None),
    "fake result, then exit 7": ("os.write(3, b'[1, 2, 3]')\nos._exit(7)", Verdict.KILLED, None),
    "patched json.dumps, then raise": (
        "import json\njson.dumps = lambda *a, **k: '[1, 2, 3]'\nraise KeyError('k')",
        Verdict.ERROR,
        NOT_REPORTED,
    ),
    "patched os._exit, then raise": (
        "real = os._exit\nos._exit = lambda status: real(0)\nraise ValueError('real')",
        Verdict.ERROR,
        ("ValueError", "real"),
    ),
    "patched os.write, then raise": (
        "real = os.write\nos.write = lambda fd, data: real(fd, b'[1, 2, 3]')\nraise ValueError('real')",
        Verdict.ERROR,
        NOT_REPORTED,
    ),
    "fake verdict on stdout, then raise": (
        f"print({FAKE_OK!r})\nraise ValueError('real')",
        Verdict.ERROR,
        ("ValueError", "real"),
    ),
    "not JSON, then exit 0": ("os.write(3, b'not json')\nos._exit(0)", Verdict.ERROR, None),
    "nothing, then exit 0": ("os._exit(0)", Verdict.KILLED, None),
    "its own error status and report": (
        'os.write(3, b\'{"error_type": "no id!", "error_message": 5}\')\nos._exit(113)',
        Verdict.ERROR,
        NOT_REPORTED,  # untrusted text: a type name only if it is an identifier, a message only if a string
    ),
    "its own memory status": ("os._exit(114)", Verdict.MEMORY, None),
    "its own CPU signal": ("import signal\nos.kill(os.getpid(), signal.SIGXCPU)", Verdict.TIMEOUT, None),
}


@pytest.mark.parametrize(("code", "verdict", "reported"), FORGERIES.values(), ids=FORGERIES.keys())
def test_a_job_cannot_forge_its_verdict(
    pool: SandboxPool, code: str, verdict: Verdict, reported: tuple[str, str | None] | None
) -> None:
    """Whatever a job writes on any descriptor, or patches in its process, can only turn its verdict into a failure,
    never into an ok with a value it did not return."""
    body = f"import os, sys\nprint('tried', flush=True)\n{code}"
    result = _run(pool, SandboxJob(f"def f():\n{indent(body, '    ')}\n    return 'never'", "f"))
    assert result.stdout.startswith("tried"), result
    assert result.verdict == verdict, result
    assert result.return_value is None, result
    if reported is not None:
        assert (result.error_type, result.error_message) == reported, result
    _clean_after(pool)


OWN_VALUES = {  # ways for a function job to report a value itself: each is what `return [1, {'a': 2}]` gives
    "write it and exit 0": "os.write(3, b'[1, {\"a\": 2}]')\nos._exit(0)",
    "patch the wrapper's globals and raise": "job = sys.modules['kt_train.sandbox.job']\njob.EXIT_ERROR = 0\n"
    "job._describe = lambda exc: b'[1, {\"a\": 2}]'\nraise ValueError('real')",
}


@pytest.mark.parametrize("code", OWN_VALUES.values(), ids=OWN_VALUES.keys())
def test_a_value_of_its_own_is_only_what_returning_it_gives(pool: SandboxPool, code: str) -> None:
    """The one thing a job can do to its result (docs/sandbox.md): report a value of its own with status 0. That is
    returning it: scores never take a job's word for correctness."""
    written = _run(pool, SandboxJob(f"import os, sys\ndef f():\n{indent(code, '    ')}", "f"))
    returned = _run(pool, SandboxJob("def f():\n    return [1, {'a': 2}]", "f"))
    assert (written.verdict, written.return_value) == (returned.verdict, returned.return_value), written
    assert returned.return_value == [1, {"a": 2}]
    _clean_after(pool)


def test_patching_json_changes_no_return_value(pool: SandboxPool) -> None:
    """The return value is encoded by an encoder the worker built before the fork: patching the job's json module
    (or the builtins it uses) reports nothing but what the function returned."""
    code = "import builtins, json\njson.dumps = lambda *a, **k: '[1, 2]'\nbuiltins.isinstance = None\nreturn 0"
    result = _run(pool, SandboxJob(f"def f():\n{indent(code, '    ')}", "f"))
    assert (result.verdict, result.return_value) == (Verdict.OK, 0), result
    _clean_after(pool)


def test_a_fake_verdict_on_stdout_of_a_script_changes_nothing(pool: SandboxPool) -> None:
    fake = json.dumps({"verdict": "error", "error_type": "MemoryError"})
    result = _run(pool, f"print({fake!r})")
    assert (result.verdict, result.error_type, result.stdout) == (Verdict.OK, None, fake + "\n")
    _clean_after(pool)


# ----- 6. floods

MEASURE = """
import json, resource, sys, time
from kt_train.sandbox import SandboxConfig, SandboxJob, SandboxPool
config = SandboxConfig(timeout_s=5.0, grace_s=0.2)
with SandboxPool(workers=1, config=config) as pool:
    pool.run('pass')
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    result = pool.run(SandboxJob(sys.argv[1], 'f'))
    wall = time.monotonic() - start
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    after = pool.run("import os\\nprint(len([p for p in os.listdir('/proc') if p.isdigit()]), os.listdir('/tmp'))")
print(json.dumps({"verdict": str(result.verdict), "message": result.error_message, "wall": wall,
                  "grown_mb": grown / 1024, "after": after.stdout}))
"""


def _measured(code: str) -> dict[str, Any]:
    """Run a function job in a fresh caller process: its verdict, wall time and how much the caller's peak RSS grew."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, code], capture_output=True, text=True, timeout=60, cwd=REPO, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_768_mb_result_flood_is_cut_off_at_once_and_the_caller_stays_small() -> None:
    code = "import os\ndef f():\n    chunk = b'1' * (1 << 20)\n    for _ in range(768):\n        os.write(3, chunk)"
    seen = _measured(code)
    assert seen["verdict"] == "error" and "max_result_bytes" in seen["message"], seen
    assert seen["wall"] < 2.5, seen  # well before the 5 s timeout
    assert seen["grown_mb"] < 200, seen
    assert seen["after"] == "3 []\n", seen


def test_a_small_result_of_many_values_does_not_blow_up_the_caller() -> None:
    """15 MB of JSON (under max_result_bytes) that decodes to 5 million lists in the caller."""
    code = (
        "import os\ndef f():\n    data = memoryview(b'[' + b'[],' * 5_000_000 + b'[]]')\n    while data:\n"
        "        data = data[os.write(3, data) :]\n    os._exit(0)"
    )
    seen = _measured(code)
    assert seen["wall"] < 5.0 + 0.2 + SLACK_S, seen
    assert seen["grown_mb"] < 200, seen


def test_stdout_flood_is_capped(pool: SandboxPool) -> None:
    result = _run(pool, "import sys\nprint('tried')\nwhile True:\n    sys.stdout.write('x' * 65536)")
    assert result.verdict == Verdict.TIMEOUT and result.truncated, result.error_message
    assert len(result.stdout) == FAST.max_output_bytes and result.stdout.startswith("tried")
    _clean_after(pool)


def test_stderr_flood_is_capped(pool: SandboxPool) -> None:
    result = _run(pool, "import sys\nprint('tried')\nfor _ in range(128):\n    sys.stderr.write('y' * 65536)")
    assert (result.verdict, result.truncated, result.stdout) == (Verdict.OK, True, "tried\n")
    assert result.stderr == "y" * FAST.max_output_bytes
    _clean_after(pool)


def test_binary_flood_is_capped_and_decoded(pool: SandboxPool) -> None:
    result = _run(pool, "import os\nfor _ in range(64):\n    os.write(1, bytes(range(128, 256)) * 512)")
    assert (result.verdict, result.truncated) == (Verdict.OK, True)
    assert len(result.stdout) == FAST.max_output_bytes and set(result.stdout) == {"\ufffd"}
    _clean_after(pool)


def test_all_three_channels_at_once(pool: SandboxPool) -> None:
    code = (
        "import os, threading\ndef flood(fd):\n    while True:\n        os.write(fd, b'z' * 65536)\n"
        "def f():\n    for fd in (1, 2):\n        threading.Thread(target=flood, args=(fd,), daemon=True).start()\n"
        "    flood(3)"
    )
    result = _run(pool, SandboxJob(code, "f"))
    assert result.verdict == Verdict.ERROR and "max_result_bytes" in str(result.error_message), result
    assert result.duration_s < FAST.timeout_s  # cut off at the result's cap, not at the clock
    assert len(result.stdout) <= FAST.max_output_bytes and len(result.stderr) <= FAST.max_output_bytes
    _clean_after(pool)


def test_a_huge_exception_message_is_capped(pool: SandboxPool) -> None:
    result = _run(pool, SandboxJob("def f():\n    raise ValueError('m' * 10_000_000)", "f"))
    assert (result.verdict, result.error_type) == (Verdict.ERROR, "ValueError")
    assert result.error_message == "m" * 2000 and len(result.stderr) <= FAST.max_output_bytes
    _clean_after(pool)


def test_a_deeply_nested_result_is_an_error_and_its_daemon_dies(pool: SandboxPool) -> None:
    code = "import os, time\ndef f():\n    if os.fork() == 0:\n        os.setsid()\n        time.sleep(100)\n"
    code += "    os.write(3, b'[' * 100000)\n    os._exit(0)"
    result = _run(pool, SandboxJob(code, "f"))
    assert (result.verdict, result.return_value) == (Verdict.ERROR, None), result
    assert "nested too deeply" in str(result.error_message)
    _clean_after(pool)  # the daemon is gone


# ----- 7. limits of the job as a whole

CHILDREN = """
import os, time
pids = []
for _ in range(6):
    try:
        pid = os.fork()
    except OSError:
        continue
    if pid == 0:
        block = bytearray(200 << 20)
        block[::4096] = b'1' * len(block[::4096])
        time.sleep(1.0)
        os._exit(0)
    pids.append(pid)
print('succeeded', sum(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) == 0 for p in pids))
"""


def test_six_children_of_200_mb_do_not_all_fit(canaries: dict[str, Any]) -> None:
    """Each child is under the per-process limit (256 MiB); all six together (1.2 GB) are not, in the cgroup."""
    config = SandboxConfig(timeout_s=6.0, grace_s=0.2, memory_mb=256)
    with SandboxPool(workers=1, config=config) as own:
        result = _run(own, CHILDREN, config)
        assert result.verdict in {Verdict.OK, Verdict.MEMORY}, result
        if result.verdict == Verdict.OK:
            assert int(result.stdout.split()[-1]) < 6, result
        _clean_after(own)


def test_a_counted_fork_bomb_stops_at_max_processes(canaries: dict[str, Any]) -> None:
    config = SandboxConfig(timeout_s=3.0, grace_s=0.2, max_processes=20)
    code = "import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            time.sleep(100)\n"
    code += "        n += 1\nexcept OSError as exc:\n    print('forked', n, type(exc).__name__)"
    with SandboxPool(workers=1, config=config) as own:
        result = _run(own, code, config)
        assert result.verdict == Verdict.OK, result
        assert int(result.stdout.split()[1]) < 20, result
        _clean_after(own)


def test_an_exponential_fork_bomb_ends_in_bounded_time(pool: SandboxPool) -> None:
    result = _run(pool, "import os\nprint('tried', flush=True)\nwhile True:\n    os.fork()")
    assert result.verdict in {Verdict.ERROR, Verdict.KILLED, Verdict.TIMEOUT}, result
    _clean_after(pool)


def test_two_busy_processes_share_one_cpu(canaries: dict[str, Any]) -> None:
    config = SandboxConfig(timeout_s=4.0, grace_s=0.2)
    code = (
        "import os, time\nend = time.monotonic() + 1.5\nr, w = os.pipe()\nchild = os.fork()\n"
        "while time.monotonic() < end:\n    pass\nif child == 0:\n    os.write(w, str(time.process_time()).encode())\n"
        "    os._exit(0)\nos.waitpid(child, 0)\nprint('cpu', time.process_time() + float(os.read(r, 64)))"
    )
    with SandboxPool(workers=1, config=config) as own:
        result = _run(own, code, config)
        assert result.verdict == Verdict.OK, result
        assert float(result.stdout.split()[1]) < 2.1, result  # 1.5 s of wall clock on one CPU (on two: 3 s)
        _clean_after(own)


def test_spinning_threads_time_out(pool: SandboxPool) -> None:
    code = "import threading\ndef spin():\n    while True:\n        pass\nthreading.Thread(target=spin).start()\n"
    result = _run(pool, code + "print('tried', flush=True)\nwhile True:\n    pass")
    assert result.verdict == Verdict.TIMEOUT and result.stdout == "tried\n", result
    _clean_after(pool)


def test_the_cpu_time_limit_ends_a_job_before_its_clock(canaries: dict[str, Any]) -> None:
    config = SandboxConfig(timeout_s=4.0, grace_s=0.2, cpu_s=1)
    with SandboxPool(workers=1, config=config) as own:
        result = _run(own, "while True:\n    pass", config)
        assert result.verdict == Verdict.TIMEOUT and "CPU" in str(result.error_message), result
        assert result.duration_s < 3.0
        _clean_after(own)


def test_a_huge_allocation_is_memory(pool: SandboxPool) -> None:
    result = _run(pool, "print('tried', flush=True)\nx = bytearray(10**11)")
    assert (result.verdict, result.error_type) == (Verdict.MEMORY, "MemoryError"), result
    _clean_after(pool)


# ----- 8. copying between KT candidates

HONEST = f"output = {SEQUENCE}\nopen('/tmp/out.txt', 'w').write(str(output))\n"
HONEST += "open('/dev/shm/out.txt', 'w').write(str(output))"
STEAL = (
    "import json, os, re, sys\n"
    r"PATTERN = re.compile(rb'output = \[(\d+(?:, *\d+){4,})\]')" + "\n"
    "found = None\n"
    "def steal(blob):\n"
    "    global found\n"
    "    match = PATTERN.search(blob)\n"
    "    if match and found is None:\n"
    "        found = [int(x) for x in match.group(1).split(b',')]\n"
)
CHEATS = {
    "gc objects": "import gc\nfor o in gc.get_objects():\n"
    "    if type(o) is list and len(o) >= 5 and all(type(v) is int for v in o) and found is None:\n"
    "        found = list(o)\n    elif type(o) is dict:\n        for v in list(o.values()):\n"
    "            if type(v) is str:\n                steal(v.encode('utf-8', 'replace'))\n"
    "            elif type(v) in (bytes, bytearray):\n                steal(bytes(v))",
    "frames and what they reach": "seen = set()\ndef visit(o, depth):\n    try:\n        look(o, depth)\n"
    "    except Exception:\n        pass\ndef look(o, depth):\n    if id(o) in seen or depth > 3:\n"
    "        return\n    seen.add(id(o))\n    if isinstance(o, (bytes, bytearray, memoryview)):\n"
    "        steal(bytes(o))\n    elif isinstance(o, str):\n        steal(o.encode('utf-8', 'replace'))\n"
    "    elif isinstance(o, dict):\n        for v in list(o.values()):\n            visit(v, depth + 1)\n"
    "    elif isinstance(o, (list, tuple, set, frozenset)):\n"
    "        for v in list(o):\n            visit(v, depth + 1)\n"
    "    elif hasattr(o, '__dict__') and not isinstance(o, type):\n        visit(vars(o), depth + 1)\n"
    "f = sys._getframe()\nwhile f is not None:\n    visit(f.f_locals, 0)\n    visit(f.f_globals, 0)\n    f = f.f_back",
    "/tmp/out.txt": "try:\n    found = json.loads(open('/tmp/out.txt').read())\nexcept OSError:\n    pass",
    "/dev/shm/out.txt": "try:\n    found = json.loads(open('/dev/shm/out.txt').read())\nexcept OSError:\n    pass",
    "/proc/*/cmdline": "for p in os.listdir('/proc'):\n    if p.isdigit():\n        try:\n"
    "            steal(open(f'/proc/{p}/cmdline', 'rb').read().replace(b'\\0', b' '))\n        except OSError:\n"
    "            pass",
    "/proc/*/environ": "for p in os.listdir('/proc'):\n    if p.isdigit():\n        try:\n"
    "            steal(open(f'/proc/{p}/environ', 'rb').read().replace(b'\\0', b' '))\n        except OSError:\n"
    "            pass",
    "/proc/self/mem": "import ctypes\nctypes.CDLL(None).prctl(4, 1, 0, 0, 0)\n"
    "memory = open('/proc/self/mem', 'rb', buffering=0)\n"
    "for line in list(open('/proc/self/maps')):\n    start, end = (int(x, 16) for x in line.split()[0].split('-'))\n"
    "    try:\n        memory.seek(start)\n        steal(memory.read(end - start))\n"
    "    except (OSError, OverflowError, ValueError):\n        pass",
    "memory by ctypes": "import ctypes\nfor line in list(open('/proc/self/maps')):\n"
    "    span, perms = line.split()[:2]\n    if perms.startswith('r') and '[v' not in line:\n"
    "        start, end = (int(x, 16) for x in span.split('-'))\n        steal(ctypes.string_at(start, end - start))",
    "inherited descriptors": "for fd in (0, *range(3, 1024)):\n    try:\n        os.set_blocking(fd, False)\n"
    "        steal(b'output = ' + os.read(fd, 1 << 20))\n    except OSError:\n        pass",
    "the environment": f"value = os.environ.get({SEQUENCE_ENV!r})\nfound = json.loads(value) if value else None\n"
    "for v in os.environ.values():\n    steal(v.encode())",
    "hooks for the next candidates": "import builtins\nbuiltins.list = lambda *a: [-1]\n"
    'json.dumps = lambda *a, **k: \'{"status": "ok", "output": [], "length": 0}\'\n'
    "sys._getframe(1).f_globals['kt_check'] = lambda code, keep: {'status': 'ok', 'output': [], 'length': 0}\n"
    "open('/tmp/usercustomize.py', 'w').write('import builtins; builtins.print = None')\n"
    "os.environ['PYTHONSTARTUP'] = '/tmp/usercustomize.py'",
}


@pytest.fixture(scope="module", params=[1, 2], ids=["1 worker", "2 workers"])
def checker(request: pytest.FixtureRequest, canaries: dict[str, Any]) -> Iterator[Any]:
    from eval.kt.checking import CandidateChecker, CheckConfig

    with CandidateChecker("python", CheckConfig(timeout_s=2.0, memory_mb=256, workers=request.param)) as started:
        started.check(["output = list([1])"], [[1]])  # the workers are up (a program that runs: a call)
        yield started


@pytest.mark.parametrize("cheat", CHEATS.values(), ids=CHEATS.keys())
def test_a_kt_candidate_cannot_copy_a_batch_mate(checker: Any, cheat: str) -> None:
    """The honest candidate first, then the cheater (right after it in the same worker, and a copy at once in the
    other worker), then another honest one: the cheater runs to its end (`output` assigned) without the output."""
    from eval.kt.checking import Verdict as Check

    cheater = f"{STEAL}{cheat}\noutput = found if found else [-1]"
    codes = [HONEST, cheater, cheater + "\n# a copy", HONEST + "\n# again"]
    start = time.monotonic()
    honest, cheated, copy, again = checker.check(codes, [SEQUENCE] * 4)
    assert time.monotonic() - start < 4 * (2.0 + 0.5 + SLACK_S)
    assert honest.verdict == again.verdict == Check.CORRECT, (honest, again)
    for result in (cheated, copy):
        assert result.verdict == Check.WRONG_OUTPUT and result.output != SEQUENCE, result


# ----- 9. the KT reward

REWARD_CHEATS = {
    "walk the cache": f"for root, dirs, files in os.walk({str(CACHE_DIR)!r}):\n    for name in files:\n"
    "        found = found or json.loads(open(os.path.join(root, name)).read())['sequence']\n"
    "for root, dirs, files in os.walk(os.path.expanduser('~/.cache')):\n    for name in files:\n"
    "        steal(b'output = ' + open(os.path.join(root, name), 'rb').read())",
    "the dataset file": f"try:\n    found = json.loads(open({str(DATASET)!r}).readline())['sequence']\n"
    "except OSError:\n    pass",
    "the caller's cmdline": "for p in ['@CALLER@', '@HOLDER@', *os.listdir('/proc')]:\n    try:\n"
    "        for arg in open(f'/proc/{p}/cmdline', 'rb').read().split(b'\\0'):\n"
    "            steal(b'output = ' + arg)\n    except OSError:\n        pass",
    "environments": "for p in ['self', '@CALLER@', '@HOLDER@', *os.listdir('/proc')]:\n    try:\n"
    "        for item in open(f'/proc/{p}/environ', 'rb').read().split(b'\\0'):\n"
    "            steal(b'output = ' + item.partition(b'=')[2])\n    except OSError:\n        pass\n"
    f"found = found or json.loads(os.environ.get({SEQUENCE_ENV!r}, 'null'))",
    "the caller's session keyring": "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nL = ctypes.c_long\n"
    f"key = libc.syscall(L({KEYCTL}), L(10), L(-3), b'user', "
    f"{KEY_DESCRIPTION.encode()!r}, L(0))\nbuffer = ctypes.create_string_buffer(4096)\n"
    f"size = libc.syscall(L({KEYCTL}), L(11), L(key), buffer, L(4096)) if key > 0 else -1\n"
    "found = json.loads(buffer.raw[:size])['sequence'] if size > 0 else None",
}


@pytest.fixture(scope="module")
def reward(canaries: dict[str, Any]) -> Iterator[Any]:
    from kt_train.rewards import get_reward

    made = get_reward("kt_compression", mode="python", timeout_s=2.0, memory_mb=256, workers=2)
    made(completions=["output = list([1])"], sequence=[[1]])  # the pool is up (a program that runs: a call)
    try:
        yield made
    finally:
        made.close()


@pytest.mark.parametrize("cheat", REWARD_CHEATS.values(), ids=REWARD_CHEATS.keys())
def test_the_kt_reward_gives_nothing_to_cheats(reward: Any, canaries: dict[str, Any], cheat: str) -> None:
    """Every cheat would output the row's sequence if it found it (the canaries hold it): it gets 0, the honest
    completion keeps its positive reward."""
    code = f"{STEAL}{cheat}\noutput = found if found else [-1]"
    code = code.replace("@CALLER@", str(os.getpid())).replace("@HOLDER@", str(canaries["holder"]))
    honest = f"```python\noutput = {SEQUENCE}\n```"
    seen: dict[str, list[str]] = {}
    start = time.monotonic()
    scores = reward(completions=[honest, code], sequence=[SEQUENCE, SEQUENCE], log_extra=seen.__setitem__)
    assert time.monotonic() - start < 2 * (2.0 + 0.5 + SLACK_S)
    assert scores[0] > 0 and scores[1] == 0.0, (scores, seen)
    assert seen["kt_compression_reward_verdict"] == ["correct", "wrong_output"], seen  # the cheat ran to its end


# ----- 10. no bubblewrap: refusal, or weak isolation when allowed


def _without_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> None:
    from kt_train.sandbox import boundary

    monkeypatch.setattr(boundary, "_bwrap_works", lambda as_root: "bubblewrap (bwrap) is not installed")


REFUSING = {
    "SandboxPool": lambda: SandboxPool(workers=1, config=FAST),
    "run_code": lambda: run_code("print(1)", FAST),
    "call_function": lambda: call_function("def f():\n    return 1", "f", (), FAST),
}


@pytest.mark.parametrize("start", REFUSING.values(), ids=REFUSING.keys())
def test_without_bubblewrap_nothing_runs_unless_allowed(
    monkeypatch: pytest.MonkeyPatch, start: Callable[[], object]
) -> None:
    _without_bubblewrap(monkeypatch)
    before = _descendants(os.getpid())
    with pytest.raises(SandboxUnavailable) as refused:
        start()
    message = str(refused.value)
    assert "\n" not in message and "bubblewrap" in message and "allow_weak_isolation" in message
    assert _descendants(os.getpid()) <= before  # no worker was started


def test_weak_isolation_runs_when_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weak isolation sees the host filesystem (documented), but still not the caller's environment or keys."""
    _without_bubblewrap(monkeypatch)
    config = SandboxConfig(timeout_s=1.0, grace_s=0.2, allow_weak_isolation=True)
    code = "import os\nprint(os.getuid(), sorted(os.environ))\n"
    if SYSCALLS:
        code += (
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            f"print('search', libc.syscall(ctypes.c_long({KEYCTL}), ctypes.c_long(10), ctypes.c_long(-3), "
            f"b'user', {KEY_DESCRIPTION.encode()!r}, ctypes.c_long(0)))"
        )
    with SandboxPool(workers=1, config=config) as weak:
        assert weak.isolation.kind == "weak"
        result = _run(weak, code, config)
    assert result.verdict == Verdict.OK, result
    uid, *_ = result.stdout.split()
    assert int(uid) > UID_BASE and f"{ENVIRONMENT}\n" in result.stdout, result
    if SYSCALLS:
        assert result.stdout.endswith("search -1\n"), result


# ----- 11. kt sandbox run --explain


@pytest.fixture(scope="module")
def explained(canaries: dict[str, Any]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kt_train.cli", "sandbox", "run", "--explain"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _line(text: str, start: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(start))


def test_explain_names_bubblewrap_and_the_namespaces(explained: str) -> None:
    assert _line(explained, "isolation:") == "isolation: bubblewrap"
    namespaces = _line(explained, "namespaces:")
    assert all(ns in namespaces for ns in ("mount", "pid", "ipc", "uts", "network")), namespaces


def test_explain_probe_sees_no_home_etc_or_other_process(explained: str) -> None:
    root = _line(explained, "/ holds:")
    assert "home" not in root and "etc" not in root, root
    assert _line(explained, "processes in /proc:").startswith("processes in /proc: 3 ")


def test_explain_probe_sees_a_clean_environment(explained: str) -> None:
    assert _line(explained, "environment variables:") == "environment variables: HOME, LANG, PATH, TMPDIR"
    assert SECRET_ENV not in explained and _leaks(explained) == []


# ----- 10. nested user namespaces and inode floods (issue 38)

NESTED_USERNS = """
import ctypes, os, platform, subprocess
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
print('tried', flush=True)
got = {'unshare': libc.unshare(CLONE_NEWUSER), 'unshare_errno': ctypes.get_errno()}
if platform.machine() == 'x86_64':
    pid = libc.syscall(56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)  # clone(2), fork-like, in a new user namespace
    if pid == 0:
        os._exit(0)
    got['clone'] = pid if pid < 0 else 'child'
    if pid > 0:
        os.waitpid(pid, 0)
    got['clone3'] = libc.syscall(435, 0, 0)  # clone3(2): flags live in memory no filter reads
    got['clone3_errno'] = ctypes.get_errno()
tool = subprocess.run(['unshare', '--user', '--map-root-user', 'id', '-u'], capture_output=True, text=True)
got['unshare_tool'] = tool.returncode
print(got)
"""


def test_a_job_cannot_make_a_user_namespace_whoever_runs_the_pool(pool: SandboxPool) -> None:
    """As root the boundary does not put the worker in a user namespace (it runs jobs as other uids): the job must
    still not get a namespace of its own where it holds every capability."""
    result = _run(pool, NESTED_USERNS)
    assert result.verdict == Verdict.OK, result
    got = eval(result.stdout.split("\n", 1)[1])  # a dict of ints and strings the job printed
    assert (got["unshare"], got["unshare_errno"]) == (-1, errno.EPERM), got
    assert got["unshare_tool"] != 0, got
    if "clone" in got:
        assert got["clone"] == -1 and got["clone3"] == -1 and got["clone3_errno"] == errno.ENOSYS, got
    _clean_after(pool)


INODE_FLOOD = """
import os
print('tried', flush=True)
made = 0
try:
    while True:
        open(f'/tmp/f{made}', 'w').close()
        made += 1
except OSError as exc:
    print('made', made, exc.errno)
"""


def test_an_inode_flood_stops_the_job_not_the_worker(canaries: dict[str, Any]) -> None:
    """tmpfs `size` counts blocks, not inodes: empty files add kernel memory to the worker's cgroup until the OOM
    killer took the worker (issue 38). The scratch tmpfs hold `tmp_inodes` files at most."""
    config = SandboxConfig(timeout_s=6.0, wall_timeout_s=8.0, grace_s=0.2, memory_mb=256)
    with SandboxPool(workers=1, config=config) as own:
        worker = own._workers[0].process.pid
        result = _run(own, INODE_FLOOD, config)
        assert result.verdict == Verdict.OK, result
        made, error = map(int, result.stdout.split()[-2:])
        assert error == errno.ENOSPC and made < config.tmp_inodes, result
        _clean_after(own)
        assert own._workers[0].process.pid == worker  # the same worker ran the next job
