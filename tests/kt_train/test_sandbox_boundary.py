"""The sandbox as a boundary, tried as a hostile model would: reads of planted canaries, writes everywhere,
leftovers, IPC, forged verdicts, floods, limits for the job as a whole, copying between KT candidates, the KT reward's
cheats, and the refusal without bubblewrap. Every case asserts the verdict, that the canary never leaks, that nothing
persists (the next job of the same worker sees nothing; the host's /tmp, /var/tmp, /dev/shm and process count are
unchanged) and bounded time."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kt_train.sandbox import SandboxConfig, SandboxJob, SandboxPool, SandboxResult, SandboxUnavailable, Verdict

TOKEN = secrets.token_hex(12)  # the secret: planted in files and the environment, never in a path
NAME = secrets.token_hex(6)  # names the planted files and everything a job tries to create
MARK = f"kt-hostile-{NAME}"
FAST = SandboxConfig(timeout_s=1.5, wall_timeout_s=2.0, grace_s=0.2)
REPO = Path(__file__).resolve().parents[2]
HOME = Path.home()
KEY_DIR = HOME / f".kt-canary-{NAME}"
CACHE_FILE = HOME / ".cache" / "kt-train" / f"canary-{NAME}.txt"
DATASET_DIR = Path("/tmp") / f"kt-canary-data-{NAME}"
HOST_SOCKET = Path("/tmp") / f"kt-canary-{NAME}.sock"
ABSTRACT = f"\0kt-canary-{NAME}"
IS_ROOT = os.geteuid() == 0
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")


def _host_processes() -> int:
    return sum(1 for p in os.listdir("/proc") if p.isdigit())


def _host_marks() -> list[str]:
    """Anything named after this run's mark in the host's scratch directories or /."""
    found = []
    for directory in (*SCRATCH, "/"):
        found += [os.path.join(directory, n) for n in os.listdir(directory) if MARK in n]
    return found


@pytest.fixture(scope="module")
def canaries() -> Iterator[None]:
    """Plant secrets on the host (and a secret environment variable) before any worker starts."""
    KEY_DIR.mkdir(mode=0o700)
    (KEY_DIR / "id_key").write_text(TOKEN)
    (KEY_DIR / "id_key").chmod(0o600)
    CACHE_FILE.parent.mkdir(parents=True, exist_ok=True)
    CACHE_FILE.write_text(TOKEN)
    DATASET_DIR.mkdir()
    (DATASET_DIR / "items.jsonl").write_text(json.dumps({"sequence": TOKEN}) + "\n")
    os.environ["KT_CANARY_SECRET"] = TOKEN
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(HOST_SOCKET))
    HOST_SOCKET.chmod(0o777)
    unix.listen()
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(ABSTRACT)
    abstract.listen()
    try:
        yield
    finally:
        unix.close()
        abstract.close()
        HOST_SOCKET.unlink(missing_ok=True)
        os.environ.pop("KT_CANARY_SECRET", None)
        shutil.rmtree(KEY_DIR, ignore_errors=True)
        CACHE_FILE.unlink(missing_ok=True)
        shutil.rmtree(DATASET_DIR, ignore_errors=True)


@pytest.fixture(scope="module")
def pool(canaries: None) -> Iterator[SandboxPool]:
    """One worker, so that every job runs after the previous one in the same boundary."""
    with SandboxPool(workers=1, config=FAST) as shared:
        yield shared


def _clean_after(pool: SandboxPool) -> None:
    """The next job of the same worker sees only init, the worker and itself, empty scratch and no SysV IPC."""
    probe = (
        "import os, json\nprint(json.dumps([sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),"
        " os.listdir('/tmp'), os.listdir('/dev/shm'),"
        " [len(open(f'/proc/sysvipc/{k}').read().splitlines()) for k in ('shm', 'msg', 'sem')]]))"
    )
    result = pool.run(probe)
    assert result.verdict == Verdict.OK, result
    processes, tmp, shm, ipc = json.loads(result.stdout)
    assert len(processes) == 3, processes
    assert (tmp, shm, ipc) == ([], [], [1, 1, 1])


def _no_leak(result: SandboxResult) -> None:
    assert TOKEN not in result.stdout + result.stderr + json.dumps(result.return_value) + str(result.error_message)


def _bounded(result: SandboxResult, config: SandboxConfig = FAST) -> None:
    assert result.duration_s < config.wall_limit_s + config.grace_s + 2.0


# ----- reads of the host

READS = {
    "key file": f"print(open({str(KEY_DIR / 'id_key')!r}).read())",
    "shadow": "print(open('/etc/shadow').read())",
    "passwd": "print(open('/etc/passwd').read())",
    "checkout git config": f"print(open({str(REPO / '.git' / 'config')!r}).read())",
    "checkout pyproject": f"print(open({str(REPO / 'pyproject.toml')!r}).read())",
    "cache listing": f"print(os.listdir({str(CACHE_FILE.parent)!r}))",
    "cache file": f"print(open({str(CACHE_FILE)!r}).read())",
    "dataset file": f"print(open({str(DATASET_DIR / 'items.jsonl')!r}).read())",
    "home listing": f"print(os.listdir({str(HOME)!r}))",
    "own environ": "print(open('/proc/self/environ').read(), dict(os.environ))",
    "environ of every process": "print([open(f'/proc/{p}/environ').read()\n"
    "       for p in os.listdir('/proc') if p.isdigit()])",
    "cmdline of every process": "print([open(f'/proc/{p}/cmdline').read()\n"
    "       for p in os.listdir('/proc') if p.isdigit()])",
    "caller's environ by host pid": f"print(open('/proc/{os.getpid()}/environ').read())",
    "walk the filesystem": (
        "for root, dirs, files in os.walk('/'):\n"
        "    dirs[:] = [d for d in dirs if d not in ('proc', 'sys')]\n"
        "    for name in files + dirs:\n"
        f"        if 'canary' in name or {NAME!r} in name:\n"
        "            print(os.path.join(root, name), open(os.path.join(root, name)).read())"
    ),
    "own memory": (
        "import ctypes\nhits = scanned = 0\n"
        "for line in open('/proc/self/maps'):\n"
        "    span, perms = line.split()[:2]\n"
        "    if not perms.startswith('r') or '[v' in line:\n        continue\n"
        "    start, end = (int(x, 16) for x in span.split('-'))\n"
        "    data = ctypes.string_at(start, end - start)\n"
        "    scanned += len(data)\n"
        f"    i = data.find({TOKEN[:8].encode()!r})\n"  # the whole token is never in this code: compared masked
        "    while i >= 0:\n"
        f"        hits += bytes(x ^ 85 for x in data[i : i + {len(TOKEN)}]) == {bytes(ord(c) ^ 85 for c in TOKEN)!r}\n"
        f"        i = data.find({TOKEN[:8].encode()!r}, i + 1)\n"
        "print('memory hits', hits, 'scanned', scanned)"
    ),
}


@pytest.mark.parametrize("code", READS.values(), ids=READS.keys())
def test_a_job_reads_nothing_of_the_host(pool: SandboxPool, code: str) -> None:
    result = pool.run(f"import os\nprint('tried')\n{code}")
    assert result.stdout.startswith("tried"), result
    _no_leak(result)
    _bounded(result)
    if "string_at" in code:  # every readable page of its own memory scanned: nothing of the caller in it
        assert result.verdict == Verdict.OK, result
        assert "memory hits 0 scanned" in result.stdout and int(result.stdout.split()[-1]) > 10**6
    _clean_after(pool)


# ----- writes


WRITES = {
    "/tmp": ("/tmp", True),
    "/dev/shm": ("/dev/shm", True),
    "cwd": (".", True),
    "/var/tmp": ("/var/tmp", False),
    "/": ("/", False),
    "/usr": ("/usr", False),
    "site-packages": (next(p for p in sys.path if p.endswith("site-packages")), False),
    "/opt/kt-train": ("/opt/kt-train", False),
    "home": (str(HOME), False),
    "checkout": (str(REPO), False),
}


@pytest.mark.parametrize(("directory", "allowed"), WRITES.values(), ids=WRITES.keys())
def test_writes_stay_inside_and_vanish(pool: SandboxPool, directory: str, allowed: bool) -> None:
    code = f"import os\nprint('tried')\nwith open(os.path.join({directory!r}, {MARK!r}), 'w') as f:\n    f.write('x')"
    result = pool.run(code)
    assert result.stdout == "tried\n"
    assert result.verdict == (Verdict.OK if allowed else Verdict.ERROR), result
    _bounded(result)
    _clean_after(pool)
    assert _host_marks() == []


# ----- leftovers

LEFTOVERS = {
    "deep tree": "for i in range(1500):\n    os.mkdir('d')\n    os.chdir('d')\nprint('deep')",
    "renamed cwd": "os.mkdir('/tmp/a')\nos.chdir('/tmp/a')\nos.rename('/tmp/a', '/tmp/b')\nopen('x', 'w').write('1')",
    "chmod 000": "os.makedirs('/tmp/locked/in')\nopen('/tmp/locked/in/f', 'w')\nos.chmod('/tmp/locked/in', 0)\n"
    "os.chmod('/tmp/locked', 0)",
    "fifo and socket files": "os.mkfifo('/tmp/fifo')\nimport socket\nsocket.socket(socket.AF_UNIX).bind('/dev/shm/s')",
    "exec /bin/sh": "os.execv('/bin/sh', ['sh', '-c', 'sleep 100 & echo started'])",
    "setsid daemon": "if os.fork() == 0:\n    os.setsid()\n    time.sleep(100)\ntime.sleep(0.2)",
    "double fork": "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(100)\n"
    "    os._exit(0)\ntime.sleep(0.2)",
    "children at the timeout": "for _ in range(5):\n    os.fork() or time.sleep(100)\ntime.sleep(100)",
    "rename cwd's mount": "os.rename('/tmp', '/tmp2')",
}


@pytest.mark.parametrize("code", LEFTOVERS.values(), ids=LEFTOVERS.keys())
def test_nothing_is_left_behind(pool: SandboxPool, code: str) -> None:
    result = pool.run(f"import os, time\n{code}")
    assert result.verdict in set(Verdict)
    _bounded(result)
    _clean_after(pool)


def test_no_process_is_left_on_the_host_after_the_pool_closes(canaries: None) -> None:
    before = _host_processes()
    with SandboxPool(workers=2, config=FAST) as own:
        own.map([f"import os, time\n{LEFTOVERS[name]}" for name in ("setsid daemon", "double fork", "exec /bin/sh")])
    deadline = time.monotonic() + 3.0
    while _host_processes() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _host_processes() <= before


# ----- IPC

IPC = {
    "host unix socket": "import socket\ns = socket.socket(socket.AF_UNIX)\nprint('tried')\n"
    f"s.connect({str(HOST_SOCKET)!r})",
    "host abstract socket": "import socket\ns = socket.socket(socket.AF_UNIX)\nprint('tried')\n"
    f"s.connect({ABSTRACT!r})",
    "network": "import socket\nprint('tried')\nsocket.create_connection(('127.0.0.1', 22), timeout=1)",
    "signal the worker": "import os\nprint('tried')\nos.kill(2, 9)",
    "signal init": "import os\nprint('tried')\nos.kill(1, 9)",
}


@pytest.mark.parametrize("code", IPC.values(), ids=IPC.keys())
def test_no_ipc_escape(pool: SandboxPool, code: str) -> None:
    result = pool.run(code)
    assert result.stdout == "tried\n"
    assert result.verdict == Verdict.ERROR, result
    assert result.error_type in {"FileNotFoundError", "ConnectionRefusedError", "OSError", "PermissionError"}
    _clean_after(pool)


@pytest.mark.parametrize("pid", [1, 2, os.getpid()], ids=["init", "worker", "caller"])
def test_ptrace_of_anything_outside_fails(pool: SandboxPool, pid: int) -> None:
    code = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    code += f"print(libc.ptrace(16, {pid}, 0, 0), ctypes.get_errno())"
    result = pool.run(code)
    assert result.verdict == Verdict.OK
    value, errno = result.stdout.split()
    assert value == "-1" and int(errno) in {1, 3}  # EPERM, or ESRCH: not even visible
    _clean_after(pool)


SYSV = {
    "shm": "libc.shmget(4242, 4096, 0o1666)",
    "msg": "libc.msgget(4242, 0o1666)",
    "sem": "libc.semget(4242, 1, 0o1666)",
}


@pytest.mark.parametrize("call", SYSV.values(), ids=SYSV.keys())
def test_sysv_ipc_objects_do_not_outlive_the_job(pool: SandboxPool, call: str) -> None:
    result = pool.run(f"import ctypes\nlibc = ctypes.CDLL(None)\nprint({call})")
    assert result.verdict == Verdict.OK and int(result.stdout) >= 0  # made inside its own IPC namespace
    _clean_after(pool)


def test_posix_message_queues_are_refused(pool: SandboxPool) -> None:
    code = "import ctypes\nrt = ctypes.CDLL('librt.so.1', use_errno=True)\n"
    code += "print(rt.mq_open(b'/kt', 0o100 | 2, 0o666, None))"
    result = pool.run(code)
    assert result.verdict == Verdict.OK and result.stdout.strip() == "-1"


# ----- forged verdicts

FAKE_OK = json.dumps({"verdict": "ok", "return_json": "[1, 2, 3]"})
FORGERIES = {
    "fake result, then raise": (f"os.write(3, {FAKE_OK!r}.encode())\nraise ValueError('real')", Verdict.ERROR),
    "fake result, then SIGKILL": ("os.write(3, b'[1, 2, 3]')\nos.kill(os.getpid(), 9)", Verdict.KILLED),
    "fake result, then loop": ("os.write(3, b'[1, 2, 3]')\nwhile True:\n    pass", Verdict.TIMEOUT),
    "fake result, then exit 7": ("os.write(3, b'[1, 2, 3]')\nos._exit(7)", Verdict.KILLED),
    "patched json, then raise": (
        "import json\njson.dumps = lambda *a, **k: '[1, 2, 3]'\nraise KeyError('k')",
        Verdict.ERROR,
    ),
    "fake verdict on stdout": (f"print({FAKE_OK!r})\nraise ValueError('real')", Verdict.ERROR),
    "fake memory claim, then exit 0": ("os.write(3, b'not json')\nos._exit(0)", Verdict.ERROR),
}


@pytest.mark.parametrize(("code", "verdict"), FORGERIES.values(), ids=FORGERIES.keys())
def test_a_job_cannot_forge_its_verdict(pool: SandboxPool, code: str, verdict: Verdict) -> None:
    result = pool.run(SandboxJob(f"import os\ndef f():\n    pass\n{code}", "f"))
    assert result.verdict == verdict, result
    assert result.return_value is None
    _bounded(result)
    _clean_after(pool)


def test_writing_its_own_value_and_exiting_is_the_same_as_returning_it(pool: SandboxPool) -> None:
    result = pool.run(SandboxJob("import os\ndef f():\n    os.write(3, b'[1, 2]')\n    os._exit(0)", "f"))
    assert (result.verdict, result.return_value) == (Verdict.OK, [1, 2])


# ----- floods


def test_stdout_and_stderr_floods_are_capped(pool: SandboxPool) -> None:
    code = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n    sys.stderr.write('y' * 65536)"
    result = pool.run(code)
    assert result.verdict == Verdict.TIMEOUT and result.truncated
    assert len(result.stdout) == len(result.stderr) == FAST.max_output_bytes
    _bounded(result)
    _clean_after(pool)


def test_a_result_flood_is_cut_off_at_once(canaries: None) -> None:
    config = SandboxConfig(timeout_s=5.0, grace_s=0.2, max_result_bytes=1 << 20)
    start = time.monotonic()
    with SandboxPool(workers=1, config=config) as own:
        result = own.run("import os\nchunk = b'1' * (1 << 20)\nfor _ in range(768):\n    os.write(3, chunk)")
        assert result.verdict == Verdict.ERROR and "max_result_bytes" in result.error_message
        assert time.monotonic() - start < 4.0  # well before the 5 s timeout
        _clean_after(own)


def test_a_deeply_nested_result_is_an_error_and_its_daemon_dies(pool: SandboxPool) -> None:
    code = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(100)\n"
    code += "os.write(3, b'[' * 100000)\nos._exit(0)"
    result = pool.run(SandboxJob(f"def f():\n    pass\n{code}", "f"))
    assert result.verdict == Verdict.ERROR and result.return_value is None
    _clean_after(pool)


def test_a_huge_return_value_is_refused(canaries: None) -> None:
    with SandboxPool(workers=1, config=SandboxConfig(max_result_bytes=10_000)) as own:
        result = own.run(SandboxJob("def f():\n    return 'x' * 100_000", "f"))
    assert result.verdict == Verdict.ERROR and "max_result_bytes" in result.error_message


# ----- limits for the job as a whole

CHILDREN = """
import os
pids = []
for _ in range(6):
    try:
        pid = os.fork()
    except OSError:  # the cgroup is full: this child is not made at all
        continue
    if pid == 0:
        block = bytearray(200 * 1024 * 1024)
        block[::4096] = b'1' * len(block[::4096])
        os.read(os.open('/dev/zero', os.O_RDONLY), 1)
        import time
        time.sleep(1.0)
        os._exit(0)
    pids.append(pid)
print(sum(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) == 0 for p in pids))
"""


@pytest.mark.skipif(not IS_ROOT, reason="cgroups need root")
def test_memory_is_limited_for_the_job_as_a_whole(canaries: None) -> None:
    with SandboxPool(workers=1, config=SandboxConfig(timeout_s=10, memory_mb=256)) as own:
        result = own.run(CHILDREN)
        assert result.verdict == Verdict.OK, result
        assert int(result.stdout) <= 2  # 6 x 200 MiB each within the per-process limit, 1.2 GB in all: not allowed
        _clean_after(own)


@pytest.mark.skipif(not IS_ROOT, reason="cgroups need root")
def test_processes_are_limited_for_the_job_as_a_whole(canaries: None) -> None:
    code = "import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            time.sleep(100)\n"
    code += "        n += 1\nexcept OSError:\n    print(n)"
    with SandboxPool(workers=1, config=SandboxConfig(timeout_s=5, max_processes=20)) as own:
        result = own.run(code)
        assert result.verdict == Verdict.OK and int(result.stdout) < 20
        _clean_after(own)


def test_cpu_time_is_bounded(pool: SandboxPool) -> None:
    result = pool.run("import os\nos.fork()\nwhile True:\n    pass")
    assert result.verdict == Verdict.TIMEOUT
    _bounded(result)
    _clean_after(pool)


# ----- copying between KT candidates

HONEST = "output = [3, 1, 4, 1, 5, 9, 2, 6]\nopen('/tmp/out.txt', 'w').write(str(output))\n"
HONEST += "open('/dev/shm/out.txt', 'w').write(str(output))"
CHEATERS = {
    "gc walk": "import gc\nfor o in gc.get_objects():\n"
    "    if type(o) is list and o[:3] == [3, 1, 4]:\n        output = o",
    "frames": "import sys\nf = sys._getframe()\nwhile f:\n    for v in f.f_locals.values():\n"
    "        if isinstance(v, str) and '3, 1, 4' in v:\n            output = eval(v.split('=')[1].split('\\n')[0])\n"
    "    f = f.f_back",
    "files left by the honest one": "output = eval(open('/tmp/out.txt').read())",
    "shm left by the honest one": "output = eval(open('/dev/shm/out.txt').read())",
    "proc of other processes": "import os\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n"
    "        t = open(f'/proc/{p}/cmdline').read()\n        if '3, 1, 4' in t:\n"
    "            output = [3, 1, 4, 1, 5, 9, 2, 6]",
    "own memory": "import re\nm = open('/proc/self/mem', 'rb')\nfor line in open('/proc/self/maps'):\n"
    "    a, b = (int(x, 16) for x in line.split()[0].split('-'))\n    try:\n        m.seek(a)\n"
    "        hit = re.search(rb'\\[3, 1, 4, 1, 5, 9, 2, 6\\]', m.read(b - a))\n"
    "    except Exception:\n        continue\n"
    "    if hit:\n        output = [3, 1, 4, 1, 5, 9, 2, 6]\n        break",
    "own memory by ctypes": "import ctypes, re\nfor line in open('/proc/self/maps'):\n"
    "    span, perms = line.split()[:2]\n    if not perms.startswith('r') or '[v' in line:\n        continue\n"
    "    a, b = (int(x, 16) for x in span.split('-'))\n"
    "    for m in re.finditer(rb'\\[3, 1, 4(?:, \\d+){5}\\]', ctypes.string_at(a, b - a)):\n"
    "        output = eval(m.group())",
    "hooks the checker": "import builtins\nbuiltins.exec = lambda *a, **k: None\nglobals()['kt_check'] = None\n"
    "output = None",
}
SEQUENCE = [3, 1, 4, 1, 5, 9, 2, 6]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("cheat", CHEATERS, ids=CHEATERS.keys())
def test_a_kt_candidate_cannot_copy_a_batch_mate(canaries: None, cheat: str, workers: int) -> None:
    from eval.kt.checking import CandidateChecker, CheckConfig
    from eval.kt.checking import Verdict as CheckVerdict

    follower = "output = [0]"  # an honest candidate after the cheater: its verdict must not change
    with CandidateChecker("python", CheckConfig(timeout_s=2.0, workers=workers)) as checker:
        honest, cheater, after = checker.check([HONEST, CHEATERS[cheat], follower], [SEQUENCE] * 3)
    assert honest.verdict == CheckVerdict.CORRECT
    assert cheater.verdict != CheckVerdict.CORRECT, cheater
    assert after.verdict == CheckVerdict.WRONG_OUTPUT and after.output == [0]


def test_the_kt_reward_gives_nothing_to_cheats(canaries: None) -> None:
    from eval.rewards.kt import KTCompressionReward

    sequence = list(range(1, 41))
    honest = "output = list(range(1, 41))"
    cheats = [
        f"import os\nfor r, d, f in os.walk({str(HOME / '.cache')!r}):\n    print(r, f)\noutput = eval(open("
        f"{str(CACHE_FILE)!r}).read())",
        "import os\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n"
        "        c = open(f'/proc/{p}/cmdline').read()\n        if 'dataset' in c:\n            output = eval(c)",
        f"output = [int(x) for x in open({str(DATASET_DIR / 'items.jsonl')!r}).read().split()]",
        "import gc\noutput = next(o for o in gc.get_objects() if type(o) is list and o[:3] == [1, 2, 3])",
    ]
    reward = KTCompressionReward(mode="python", timeout_s=2.0, workers=2)
    try:
        scores = reward(completions=[honest, *cheats], sequence=[sequence] * (1 + len(cheats)))
    finally:
        reward.close()
    assert scores[0] > 0
    assert scores[1:] == [0.0] * len(cheats)


# ----- without a boundary; --explain


def test_without_bubblewrap_the_pool_refuses_unless_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    from kt_train.sandbox import boundary

    monkeypatch.setattr(boundary, "_bwrap_works", lambda as_root: "bubblewrap (bwrap) is not installed")
    with pytest.raises(SandboxUnavailable) as refused:
        SandboxPool(workers=1)
    message = str(refused.value)
    assert "\n" not in message and "bubblewrap" in message and "allow_weak_isolation" in message
    with SandboxPool(workers=1, config=SandboxConfig(allow_weak_isolation=True)) as weak:
        assert weak.isolation.kind == "weak"
        assert weak.run("print(1)").stdout == "1\n"


def test_the_cli_refuses_in_one_line_without_bubblewrap(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text("print(1)\n")
    code = (
        "import sys\nfrom kt_train.sandbox import boundary\nboundary._bwrap_works = lambda as_root: 'no bwrap'\n"
        f"from kt_train.cli import main\nsys.exit(main(['sandbox', 'run', {str(script)!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "allow-weak-isolation" in done.stderr


def test_explain_shows_the_isolation_in_force() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kt_train.cli", "sandbox", "run", "--explain"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "isolation: bubblewrap" in text and "network" in text and "pid" in text
    root_line = next(line for line in text.splitlines() if "/ holds:" in line)
    assert "home" not in root_line and "etc" not in root_line
    assert "processes in /proc: 3" in text
