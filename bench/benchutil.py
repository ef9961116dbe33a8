"""Shared helpers of the benchmark scripts: machine info, process-tree memory sampling, docs/benchmarks.md sections."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "benchmarks.md"
GIB = 1024**3
MIB = 1024**2

HEADER = """# Benchmarks

Last updated {date} on: {machine}.

Figures measured by the scripts under `bench/`; each script rewrites its own section below (between the
`<!-- bench:... -->` markers) and this header. Reproduce them from the repository root with:

```
make setup && . .venv/bin/activate
make bench               # 1M DSL pairs, sandbox, traces, LoRA SFT, KT checking/baselines/LMiC (+ the official
                         # comparison with /tmp/official)
python bench/bench_dsl_generate.py --repeats 3 --check-determinism   # the figures below (~4 min)
pip install pandas       # needed by the official generator only (not a project dependency)
python bench/compare_official.py --official-dir /tmp/official       # side by side (~4 min)
```

The official generator (facebookresearch/KoLMogorov, CC-BY-NC) is never copied into this repository;
`compare_official.py` imports it from a directory outside it. Make that directory with:

```
# /tmp/KoLMogorov: a clone of the facebookresearch/KoLMogorov repository
mkdir -p /tmp/official
git -C /tmp/KoLMogorov archive HEAD src/utils.py src/synthetic_data_generation/generate_data.py \\
    src/__init__.py __init__.py | tar -x -C /tmp/official
```

Timings on a shared virtual machine are noisy (the same 1M-pair run has taken from 26 s to 39 s on the same day,
and other work runs on it at times): the figures are medians of alternated repeats, every run is listed, and each
section records the load average and how well two CPU-bound processes scaled when it was measured.
"""

OFFICIAL_HELP = """the official generator was not found in {path}.
It is not part of this repository (licence CC-BY-NC); extract the files it needs from a clone of
facebookresearch/KoLMogorov:

  # /tmp/KoLMogorov: a clone of the facebookresearch/KoLMogorov repository
  mkdir -p {path}
  git -C /tmp/KoLMogorov archive HEAD src/utils.py src/synthetic_data_generation/generate_data.py \\
      src/__init__.py __init__.py | tar -x -C {path}

It also needs pandas: pip install pandas"""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def total_memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024 / GIB
    except OSError:
        pass
    return None


def machine_line() -> str:
    """One line: cores, CPU model, memory, Python, OS."""
    memory = total_memory_gib()
    mem = f", {memory:.0f} GiB RAM" if memory else ""
    return (
        f"{os.cpu_count()} cores (nproc {len(os.sched_getaffinity(0))}), {cpu_model()}{mem}, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def now() -> str:
    return dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")


def git_revision() -> str:
    """Short commit of the working tree, with '+dirty' when it has changes."""
    try:
        rev = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
        ).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_header(command: str) -> list[str]:
    """The opening lines of a section: when, at which commit, on which machine, and the command that measured it."""
    return [
        f"Measured {now()} at commit {git_revision()} on {machine_line()}, in one run of:",
        "",
        "```",
        command,
        "```",
    ]


def invocation(script: str, argv: list[str] | None) -> str:
    """The command line that ran `script`, for the report (without --no-doc)."""
    words = [w for w in (sys.argv[1:] if argv is None else argv) if w != "--no-doc"]
    return " ".join(["python", f"bench/{script}", *words])


def kt_command() -> list[str]:
    """The `kt` executable of the running interpreter's environment."""
    local = Path(sys.executable).parent / "kt"
    if local.exists():
        return [str(local)]
    found = shutil.which("kt")
    if found is None:
        sys.exit("kt not found: install the project (make setup) and activate .venv")
    return [found]


def load_average() -> float:
    """1-minute load average (other work on the machine skews the figures)."""
    return os.getloadavg()[0]


_SPIN = "import time\nt = time.perf_counter()\nx = 0\nfor i in range({n}): x += i\nprint(time.perf_counter() - t)"


def parallel_capacity(workers: int, iterations: int = 10_000_000, repeats: int = 3) -> tuple[float, float]:
    """(single-process seconds, speed-up of `workers` concurrent copies) of a pure-Python loop, medians of `repeats`.

    The speed-up is workers * t1 / t_parallel: about `workers` on idle physical cores, less on SMT siblings, throttled
    virtual CPUs or a busy machine. It bounds what any process-parallel Python program can gain here.
    """
    code = _SPIN.format(n=iterations)

    def spin(copies: int) -> float:
        start = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL) for _ in range(copies)]
        for proc in procs:
            proc.wait()
        return time.perf_counter() - start

    singles, parallels = [], []
    for _ in range(repeats):
        singles.append(spin(1))
        parallels.append(spin(workers))
    single = statistics.median(singles)
    return single, workers * single / statistics.median(parallels)


def machine_check(workers: int, skip: bool) -> str:
    """A sentence on the machine's state: load average and, unless `skip`, the parallel capacity of `workers` cores."""
    text = f"Load average at the start: {load_average():.2f}."
    if workers > 1 and not skip:
        single, speedup = parallel_capacity(workers)
        text += (
            f" Capacity check (medians of 3 alternated runs): {workers} concurrent copies of a pure-Python loop "
            f"({single:.2f} s alone) did "
            f"{speedup:.2f}x the work per second of one ({workers} would be perfect scaling): a bound on what "
            "workers can gain here."
        )
    print(text, file=sys.stderr, flush=True)
    return text


# ----- process-tree memory


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0  # gone, or a zombie (no VmRSS line)


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.extend(int(k) for k in f.read().split())
    except OSError:
        pass
    return kids


def process_tree(root: int) -> list[int]:
    """`root` and all its descendants (via /proc/<pid>/task/<tid>/children)."""
    tree, stack = [], [root]
    while stack:
        pid = stack.pop()
        tree.append(pid)
        stack.extend(_children(pid))
    return tree


@dataclass
class RunResult:
    """Wall time and memory of one measured command."""

    wall_s: float
    peak_tree_rss: int  # max over samples of the summed VmRSS of the process tree
    peak_single_rss: int  # max over samples and processes of VmRSS
    kernel_maxrss: int  # ru_maxrss of the child from wait4 (its largest process, descendants it reaped included)
    max_processes: int
    samples: int
    returncode: int
    output: str


def run_measured(cmd: list[str], interval: float = 0.1, env: dict[str, str] | None = None) -> RunResult:
    """Run `cmd`, sampling the VmRSS of its whole process tree every `interval` seconds."""
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        peak_tree = peak_single = max_procs = samples = 0
        status = None
        while True:
            pid, wait_status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                wall = time.perf_counter() - start
                status = wait_status
                break
            tree = process_tree(proc.pid)
            rss = [_rss_bytes(p) for p in tree]
            peak_tree = max(peak_tree, sum(rss))
            peak_single = max(peak_single, max(rss, default=0))
            max_procs = max(max_procs, len(tree))
            samples += 1
            time.sleep(interval)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        output = out.read()
    return RunResult(
        wall_s=wall,
        peak_tree_rss=peak_tree,
        peak_single_rss=peak_single,
        kernel_maxrss=usage.ru_maxrss * 1024,
        max_processes=max_procs,
        samples=samples,
        returncode=proc.returncode,
        output=output,
    )


# ----- docs/benchmarks.md

SECTIONS = {
    "dsl-generate": "DSL corpus generation (1M pairs)",
    "official": "Side by side with the official generator",
    "sandbox": "Sandbox",
    "sft": "LoRA SFT on CPU",
    "traces": "Traces",
    "kt_check": "KT checking of Python completions",
    "kt_baselines": "KT baselines on the 1 MB synthetic set",
    "kt_lmic": "KT LMiC coder",
    "nl": "NL round trip: suite, oracle, guard, protocol",
    "rtce_release": "RTCE: the release's verdicts and Table 3 (QwQ-32B)",
    "seqcoder_curves": "SeqCoder from scratch: learning curves on held-out sequences",
    "kt_search": "KT test-time search (kt eval kt --search K)",
    "kt_search_segments": "KT search on the segments SeqCoder: the 2,000 held-out sequences of issue 36",
    "seqcoder_numbers": "SeqCoder numbers: one token each or digits, 7,000 steps",
    "resume": "Training resume after kill -9 (bench/bench_resume.py)",
}


def _marked(key: str, body: str) -> str:
    return f"<!-- bench:{key} -->\n{body.strip()}\n<!-- /bench:{key} -->"


def update_doc(key: str, body: str, path: Path = DOC) -> None:
    """Rewrite the header and section `key` of docs/benchmarks.md, keeping the other sections."""
    text = path.read_text() if path.exists() else ""
    header = HEADER.format(date=now(), machine=machine_line())
    if "<!-- bench:header -->" not in text:
        placeholder = "_Not measured yet._"
        text = _marked("header", header) + "\n"
        for other, title in SECTIONS.items():
            text += f"\n## {title}\n\n{_marked(other, placeholder)}\n"
    text = _replace(text, "header", header)
    if f"<!-- bench:{key} -->" in text:
        text = _replace(text, key, body)
    else:
        text = text.rstrip("\n") + f"\n\n## {SECTIONS[key]}\n\n{_marked(key, body)}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _replace(text: str, key: str, body: str) -> str:
    pattern = re.compile(rf"<!-- bench:{re.escape(key)} -->.*?<!-- /bench:{re.escape(key)} -->", re.DOTALL)
    return pattern.sub(lambda _: _marked(key, body), text, count=1)


def fmt_bytes(n: int) -> str:
    return f"{n / GIB:.2f} GiB" if n >= GIB else f"{n / MIB:.0f} MiB"


def fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def publish(key: str, body: str, no_doc: bool) -> int:
    """Print a benchmark's section and, unless `no_doc`, write it into docs/benchmarks.md; the exit status."""
    print(body)
    if not no_doc:
        update_doc(key, body)
        print(f"wrote the {key} section of {DOC}", file=sys.stderr)
    return 0


BEFORE_BOUNDARY = "758a2ac"
"""The last commit before the sandbox boundary (issue 15): the baseline the sandbox benchmarks measure against."""


@contextlib.contextmanager
def tree_at(ref: str) -> Iterator[Path]:
    """A temporary checkout (git worktree, detached) of `ref`, removed afterwards."""
    target = Path(tempfile.mkdtemp(prefix="kt-bench-baseline-"))
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "-f", "--detach", str(target), ref],
        check=True,
        capture_output=True,
    )
    try:
        yield target
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(target)], capture_output=True)
        shutil.rmtree(target, ignore_errors=True)


def run_in_tree(tree: Path, snippet: str, payload: object) -> dict:
    """Run `snippet` in a fresh interpreter with `tree` first on sys.path; it reads the JSON `payload` from stdin
    (as `payload`) and prints one JSON object, which is returned."""
    code = f"import json, sys\nsys.path.insert(0, {str(tree)!r})\npayload = json.loads(sys.stdin.read())\n{snippet}"
    done = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(payload), capture_output=True, text=True, cwd=tree, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the measurement in {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
