"""The sandbox with real processes: verdicts, limits, cleanup of what jobs leave behind, the pool and the CLI."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kt_train.sandbox import (
    SandboxConfig,
    SandboxJob,
    SandboxPool,
    SandboxResult,
    Verdict,
    call_function,
    run_code,
)

FAST = SandboxConfig(timeout_s=1.0, wall_timeout_s=1.5, grace_s=0.3)
IS_ROOT = os.geteuid() == 0


SEE_PROCESSES = "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
SEE_SCRATCH = "import os\nprint(os.listdir('/tmp'), os.listdir('/dev/shm'))"


_PF_KTHREAD = 0x00200000


def _user_process(pid: str) -> bool:
    """Whether `pid` is a process of user space (kernel threads, most of /proc here, come and go on their own)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return not int(fields[6]) & _PF_KTHREAD


def _host_processes() -> int:
    return sum(1 for p in os.listdir("/proc") if p.isdigit() and _user_process(p))


def _assert_next_job_sees_nothing(pool: SandboxPool) -> None:
    """A later job of the same worker sees only init, the worker and itself, and empty scratch directories."""
    seen = json.loads(pool.run(SEE_PROCESSES).stdout)
    assert len(seen) == 3, seen
    assert pool.run(SEE_SCRATCH).stdout == "[] []\n"


def _assert_host_back_to(count: int) -> None:
    deadline = time.monotonic() + 3.0
    while _host_processes() > count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _host_processes() <= count


def test_ok_with_stdout_and_return_value() -> None:
    result = run_code("print('hello')\nprint('oops', file=__import__('sys').stderr)")
    assert result.verdict == Verdict.OK
    assert (result.stdout, result.stderr, result.truncated) == ("hello\n", "oops\n", False)
    called = call_function("def f(x, y):\n    print('in f')\n    return (x + y, [x], {'k': None})", "f", [2, 3])
    assert called.verdict == Verdict.OK
    assert called.return_value == [5, [2], {"k": None}]
    assert called.stdout == "in f\n"
    assert called.duration_s > 0


def test_exception_gives_error_with_type_and_message() -> None:
    result = call_function("def f():\n    raise ValueError('bad input')", "f", [])
    assert (result.verdict, result.error_type, result.error_message) == (Verdict.ERROR, "ValueError", "bad input")
    assert "ValueError: bad input" in result.stderr


def test_syntax_error_and_missing_function_and_bad_return() -> None:
    assert run_code("def f(:\n").error_type == "SyntaxError"
    missing = call_function("x = 1", "f", [])
    assert (missing.verdict, missing.error_type) == (Verdict.ERROR, "NameError")
    bad = call_function("def f():\n    return {1, 2}", "f", [])
    assert bad.verdict == Verdict.ERROR
    assert "not JSON-serializable" in bad.error_message
    assert run_code("import sys\nsys.exit(0)").verdict == Verdict.OK
    assert run_code("import sys\nsys.exit(4)").error_type == "SystemExit"


def test_infinite_loop_times_out_and_leaves_nothing() -> None:
    before = _host_processes()
    start = time.monotonic()
    with SandboxPool(workers=1, config=FAST) as pool:
        result = pool.run("while True: pass")
        assert result.verdict == Verdict.TIMEOUT
        assert time.monotonic() - start < FAST.wall_limit_s + FAST.grace_s + 3
        _assert_next_job_sees_nothing(pool)
    _assert_host_back_to(before)


def test_memory_bomb_gives_memory() -> None:
    result = run_code("chunks = []\nwhile True:\n    chunks.append(bytearray(10**7))", SandboxConfig(memory_mb=200))
    assert result.verdict == Verdict.MEMORY
    assert run_code("x = bytearray(10**10)").verdict == Verdict.MEMORY


FORK_BOMB = """
import os, time
for i in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.setsid()  # try to escape the job's process group
        time.sleep(100)
        os._exit(0)
{tail}
"""


@pytest.mark.slow
@pytest.mark.parametrize("drop", [True, False], ids=["own-uid", "worker-uid"])
@pytest.mark.parametrize("tail", ["time.sleep(0.5)", "time.sleep(100)"], ids=["returns", "times-out"])
def test_fork_bomb_leaves_no_descendant(tail: str, drop: bool) -> None:
    before = _host_processes()
    config = SandboxConfig(timeout_s=2.0, grace_s=0.3, drop_privileges=drop)
    with SandboxPool(workers=1, config=config) as pool:
        result = pool.run(FORK_BOMB.format(tail=tail))
        assert result.verdict == (Verdict.OK if "0.5" in tail else Verdict.TIMEOUT)
        _assert_next_job_sees_nothing(pool)
    _assert_host_back_to(before)


def test_output_flood_is_capped() -> None:
    config = SandboxConfig(timeout_s=2.0, max_output_bytes=10_000)
    finite = run_code("for i in range(100_000):\n    print('x' * 50)", config)
    assert finite.verdict == Verdict.OK
    assert finite.truncated and len(finite.stdout) == 10_000
    endless = run_code("import sys\nwhile True:\n    sys.stderr.write('y' * 4096)", FAST)
    assert endless.verdict == Verdict.TIMEOUT
    assert endless.truncated and len(endless.stderr) == FAST.max_output_bytes


def test_sockets_cannot_connect() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        code = f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\nprint('connected')"
        result = run_code(code, FAST)
    assert result.verdict == Verdict.ERROR
    assert "connected" not in result.stdout


def test_disarmed_sockets_refuse() -> None:
    """The fallback where no network namespace can be made: the socket module refuses."""
    code = "from kt_train.sandbox.system import disarm_sockets\ndisarm_sockets()\nimport socket\nsocket.socket()"
    result = run_code(code, SandboxConfig(network=True))
    assert (result.verdict, result.error_type) == (Verdict.ERROR, "PermissionError")


def test_os_system_sleep_is_killed() -> None:
    with SandboxPool(workers=1, config=FAST) as pool:
        assert pool.run("import os\nos.system('exec sleep 100')").verdict == Verdict.TIMEOUT
        _assert_next_job_sees_nothing(pool)


@pytest.mark.parametrize(
    "code",
    ["import os\nos._exit(3)", "import os\nos.kill(os.getpid(), 9)", "import ctypes\nctypes.string_at(0)"],
    ids=["exit", "sigkill", "segfault"],
)
def test_dying_job_is_killed(code: str) -> None:
    result = run_code(code, FAST)
    assert result.verdict == Verdict.KILLED
    assert result.error_message


def test_files_stay_in_the_private_directory() -> None:
    with SandboxPool(workers=1) as pool:
        result = pool.run("import os\nopen('out.txt', 'w').write('data')\nprint(os.getcwd())")
        assert (result.verdict, result.stdout) == (Verdict.OK, "/tmp\n")
        _assert_next_job_sees_nothing(pool)
    too_big = run_code("open('big', 'wb').write(b'x' * 3 * 1024 * 1024)", SandboxConfig(file_size_mb=1))
    assert too_big.verdict == Verdict.ERROR
    assert "too large" in too_big.error_message.lower()


@pytest.mark.skipif(not IS_ROOT, reason="jobs change uid only when the supervisor is root")
def test_jobs_run_unprivileged_when_root() -> None:
    result = run_code("import os\nprint(os.getuid())\nopen('/tmp/mine', 'w')\nos.chown('/tmp/mine', 0, 0)")
    assert result.verdict == Verdict.ERROR
    assert result.error_type == "PermissionError"
    assert int(result.stdout) != 0
    assert run_code("import os\nos.kill(os.getppid(), 9)").error_type == "PermissionError"
    home, cwd = run_code("import os\nprint(os.environ['HOME'])\nprint(os.getcwd())").stdout.split()
    assert home == cwd


HOSTILE = {
    0: ("while True: pass", Verdict.TIMEOUT),
    37: ("import os\nos._exit(1)", Verdict.KILLED),
    80: ("import os\nos.kill(os.getpid(), 9)", Verdict.KILLED),
    121: ("x = bytearray(10**10)", Verdict.MEMORY),
    150: ("raise KeyError('k')", Verdict.ERROR),
    199: ("import os, time\nfor _ in range(50):\n    os.fork() or time.sleep(100)\ntime.sleep(100)", Verdict.TIMEOUT),
}


def test_pool_runs_many_jobs_in_order() -> None:
    jobs = [
        SandboxJob(HOSTILE[i][0]) if i in HOSTILE else SandboxJob("def f(x):\n    return sum(range(x))", "f", [i])
        for i in range(200)
    ]
    with SandboxPool(workers=2, preload=("json", "collections"), config=FAST) as pool:
        results = pool.map(jobs)
        assert pool.run("print(1)").stdout == "1\n"
        assert [r.verdict for r in pool.map(["pass", "1/0"], progress=True)] == [Verdict.OK, Verdict.ERROR]
    assert len(results) == 200
    for i, result in enumerate(results):
        if i in HOSTILE:
            assert result.verdict == HOSTILE[i][1], (i, result)
        else:
            assert (result.verdict, result.return_value) == (Verdict.OK, sum(range(i))), (i, result)


def test_result_round_trips_as_json() -> None:
    result = call_function("def f():\n    return [1, 'a']", "f")
    data = json.loads(json.dumps(result.to_dict()))
    assert data["verdict"] == "ok"
    assert SandboxResult.from_dict(data) == result


def test_config_is_validated() -> None:
    with pytest.raises(ValueError):
        SandboxConfig(timeout_s=0)
    with pytest.raises(ValueError):
        SandboxPool(workers=1, preload=("no_such_module_xyz",))
    assert SandboxConfig(timeout_s=2.5).cpu_limit_s == 4


def _kt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kt_train.cli", "sandbox", "run", *args], capture_output=True, text=True, timeout=60
    )


def test_cli_prints_the_verdict(tmp_path: Path) -> None:
    ok_file, loop_file = tmp_path / "ok.py", tmp_path / "loop.py"
    ok_file.write_text("print(6 * 7)\n")
    loop_file.write_text("while True:\n    pass\n")
    ok = _kt(str(ok_file))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["verdict"] == "ok"
    assert json.loads(ok.stdout)["stdout"] == "42\n"
    loop = _kt(str(loop_file), "--timeout", "1", "--memory-mb", "256")
    assert loop.returncode == 0, loop.stderr
    assert json.loads(loop.stdout)["verdict"] == "timeout"
    missing = _kt(str(tmp_path / "missing.py"))
    assert missing.returncode == 2
    assert missing.stdout == ""
    assert len(missing.stderr.strip().splitlines()) == 1


CALLER = """
import sys
from kt_train.sandbox import SandboxConfig, SandboxPool
pool = SandboxPool(workers=2, config=SandboxConfig(timeout_s=60))
print("up", flush=True)
pool.map(["import os, time\\nos.fork() or os.setsid()\\ntime.sleep(100)"] * 2)
"""


def _stale_cgroups(pid: int) -> list[str]:
    from kt_train.sandbox.cgroup import NAME_PREFIX, ROOT

    found = []
    for directory, names, _ in os.walk(ROOT):
        found += [os.path.join(directory, n) for n in names if n.startswith(f"{NAME_PREFIX}{pid}-")]
        if directory.count("/") > 8:
            names.clear()
    return found


def _descendants(root: int) -> set[int]:
    """Every living process below `root` (from the parent links in /proc)."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as f:
                parents[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_kill_9_of_the_caller_leaves_no_job_running() -> None:
    caller = subprocess.Popen([sys.executable, "-c", CALLER], stdout=subprocess.PIPE, text=True, cwd=Path.cwd())
    assert caller.stdout is not None and caller.stdout.readline() == "up\n"
    time.sleep(1.0)  # the jobs (and their setsid children) are running
    below = _descendants(caller.pid)
    assert len(below) >= 2 * 2 + 4  # bwrap, its init and the worker for each slot; the jobs and their children
    caller.kill()
    caller.wait()
    deadline = time.monotonic() + 3.0
    while any(_alive(pid) for pid in below) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in below if _alive(pid)] == []
    if IS_ROOT:
        with SandboxPool(workers=1) as pool:  # a new pool removes the cgroups the killed one left
            assert pool.run("pass").verdict == Verdict.OK
        assert _stale_cgroups(caller.pid) == []


# ----- timeouts by CPU time (the same verdict however loaded the machine is)

BURN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
WORK = "def f(n):\n    total = 0\n    for i in range(n):\n        total += i * i\n    return total\n"


def test_a_cpu_bound_job_times_out_by_its_cpu_time() -> None:
    result = run_code("while True:\n    pass", SandboxConfig(timeout_s=0.5, wall_timeout_s=5.0, grace_s=0.2))
    assert result.verdict == Verdict.TIMEOUT and "CPU-time limit of 0.5 s" in result.error_message, result
    assert 0.5 <= result.cpu_s < 1.5 and result.duration_s < 3.0, result


def test_sleeping_is_not_cpu_time_and_the_wall_clock_is_a_safety_net() -> None:
    config = SandboxConfig(timeout_s=0.5, wall_timeout_s=2.0, grace_s=0.2)
    slept = run_code("import time\ntime.sleep(1.0)", config)  # a wall-clock limit of 0.5 s would stop it
    assert slept.verdict == Verdict.OK and slept.cpu_s < 0.5 <= slept.duration_s, slept
    stuck = run_code("import time\ntime.sleep(30)", config)
    assert stuck.verdict == Verdict.TIMEOUT and "wall-clock safety limit of 2 s" in stuck.error_message, stuck
    assert 2.0 <= stuck.duration_s < 4.0, stuck


@pytest.mark.slow
def test_the_verdict_does_not_depend_on_load() -> None:
    """A job that needs about 0.3 s of CPU, with a limit of twice that, while seven other workers' jobs share its CPU
    (each worker has a cgroup of its own, so the load that slows a job down is other sandbox jobs): its wall time is
    over the limit (a wall-clock timeout would stop it), its CPU time is not. Everything runs on one CPU (the affinity
    the workers inherit), so the job gets about an eighth of it however many cores the machine has or what else runs
    on them; the limit comes from the fastest of three probes, as a CPU time inflated by other work would loosen it."""
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})
    try:
        with SandboxPool(workers=1) as pool:
            n = 200_000
            while (probe := pool.run(SandboxJob(WORK, "f", [n]))).cpu_s < 0.3:
                n *= 2
            limit = 2.0 * min([probe.cpu_s] + [pool.run(SandboxJob(WORK, "f", [n])).cpu_s for _ in range(2)])
        busy = SandboxConfig(timeout_s=20.0)
        with SandboxPool(workers=7, config=busy) as others, ThreadPoolExecutor(1) as thread:
            loading = thread.submit(others.map, [BURN.format(seconds=2 + 6 * limit)] * 7)
            time.sleep(0.5)
            with SandboxPool(workers=1, config=SandboxConfig(timeout_s=limit, wall_timeout_s=40 * limit)) as pool:
                loaded = pool.run(SandboxJob(WORK, "f", [n]))
            assert [r.verdict for r in loading.result()] == [Verdict.OK] * 7
    finally:
        os.sched_setaffinity(0, cpus)
    assert loaded.verdict == Verdict.OK and loaded.return_value == sum(i * i for i in range(n)), loaded
    assert loaded.duration_s > limit > loaded.cpu_s, (loaded, limit, probe)
