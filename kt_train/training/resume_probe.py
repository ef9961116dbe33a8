"""Whether a training command resumes bit for bit: kill it with SIGKILL, rerun it, compare with an uninterrupted run.

The command (any recipe launch, `accelerate launch ...` included) runs once to its end into `WORK/uninterrupted`, then
into `WORK/killed`, where it is killed `kills` times and rerun after each kill with the same arguments: a kill lands a
random time after a new complete checkpoint appears (up to the uninterrupted run's time between checkpoints: a random
optimizer step), or, with `kill_in_save`, the moment a checkpoint folder is seen before it is complete (a kill inside a
checkpoint write). The two runs must then hold the same per-step log (`trainer_state.json`'s `log_history`, timings
left out: loss, grad norm, learning rate, rewards...), the same weights (sha256 of `adapter_model.safetensors` or
`model.safetensors`) and, for GRPO with `log_completions`, the same prompts, completions and rewards each step
(`completions/*.parquet`). Tests (tests/recipes/test_resume_exact.py) and `bench/bench_resume.py` use it; on a config
of your own:

    python -m kt_train.training.resume_probe --work /tmp/probe --kills 2 -- \\
        accelerate launch --config_file accelerate_configs/cpu.yaml recipes/sft_kt.py --config CONFIG

(`--output_dir` is appended to the command; save checkpoints every few steps and log every step.)
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import logging
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kt_train.training.checkpoints import checkpoint_dirs, is_complete

WEIGHT_FILES = ("adapter_model.safetensors", "model.safetensors")
TIMING_KEYS = ("runtime", "per_second", "_time")  # log keys that measure time, not training
POLL_S = 0.002
# What a probed recipe config is given: a step logged and saved often, no evaluation or warm-up, one torch thread
PROBE_SETTINGS = {"report_to": [], "logging_steps": 1, "save_strategy": "steps", "save_total_limit": 2}
PROBE_SETTINGS |= {"eval_strategy": "no", "warmup_steps": 0, "torch_threads": 1}
PROBE_ENV = {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline"}
logger = logging.getLogger(__name__)


def probe_config(recipe_config: Path, folder: Path, **overrides: object) -> Path:
    """`recipe_config` with PROBE_SETTINGS and `overrides`, less its output_dir (the probe gives it), written to
    `folder`/config.yaml."""
    config = yaml.safe_load(recipe_config.read_text())
    config.pop("output_dir", None)
    config.update(PROBE_SETTINGS, **overrides)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def launch_command(recipe_script: Path, config: Path, accelerate_config: Path) -> list[str]:
    """`accelerate launch` (this interpreter's) of `recipe_script` with `config`."""
    accelerate = str(Path(sys.executable).parent / "accelerate")
    return [accelerate, "launch", "--config_file", str(accelerate_config), str(recipe_script), "--config", str(config)]


@dataclass
class Attempt:
    """One start of the command: how long it ran, and how it ended."""

    seconds: float
    killed: bool
    resumed_from: str | None = field(default=None, metadata={"help": "the checkpoint it resumed from"})
    killed_after: str | None = field(default=None, metadata={"help": "the last complete checkpoint at the kill"})
    killed_in_save: str | None = field(default=None, metadata={"help": "a checkpoint folder left half-written"})


@dataclass
class ProbeResult:
    """What the probe measured: both runs' attempts and every difference found (none: resumed bit for bit)."""

    uninterrupted_s: float
    checkpoint_gap_s: float
    attempts: list[Attempt]
    differences: list[str]

    @property
    def kills(self) -> int:
        return sum(a.killed for a in self.attempts)

    @property
    def seconds_lost_per_kill(self) -> float:
        total = sum(a.seconds for a in self.attempts)
        return (total - self.uninterrupted_s) / self.kills if self.kills else 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "identical": not self.differences,
            "kills": self.kills,
            "uninterrupted_s": round(self.uninterrupted_s, 2),
            "checkpoint_gap_s": round(self.checkpoint_gap_s, 2),
            "seconds_lost_per_kill": round(self.seconds_lost_per_kill, 2),
            "attempts": [asdict(a) for a in self.attempts],
            "differences": self.differences[:50],
        }


def run_dirs(output_dir: Path) -> list[Path]:
    """The folders of the runs a command writes: `output_dir`, and its sub-folders for recipes that train one run per
    part (sft_rtce: one per algorithm)."""
    if not output_dir.is_dir():
        return []
    return [
        output_dir,
        *sorted(p for p in output_dir.iterdir() if p.is_dir() and not p.name.startswith("checkpoint-")),
    ]


def all_checkpoints(output_dir: Path) -> list[Path]:
    """The checkpoint folders of every run under `output_dir`, complete or not."""
    return [folder for run in run_dirs(output_dir) for folder in checkpoint_dirs(run)]


def complete(output_dir: Path) -> list[Path]:
    return [folder for folder in all_checkpoints(output_dir) if is_complete(folder)]


class CommandFailed(RuntimeError):
    """The command exited with an error (its log's tail in the message)."""


def _start(command: Sequence[str], output_dir: Path, log: Path, env: Mapping[str, str] | None) -> subprocess.Popen:
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(  # its own process group: the kill takes the launcher and every rank
            [*command, "--output_dir", str(output_dir)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=None if env is None else dict(env),
            start_new_session=True,
        )


def _finished(process: subprocess.Popen, log: Path) -> None:
    if process.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-4000:]
        raise CommandFailed(f"the command exited with {process.returncode}; the end of {log}:\n{tail}")


def _kill(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_to_end(
    command: Sequence[str], output_dir: Path, env: Mapping[str, str] | None = None, timeout: float = 3600
) -> tuple[float, list[float]]:
    """Run the command into `output_dir` to its end; its seconds and the times (from its start) at which each new
    complete checkpoint appeared."""
    start = time.monotonic()
    log = output_dir.parent / f"{output_dir.name}.log"
    process = _start(command, output_dir, log, env)
    seen: dict[str, float] = {}
    while process.poll() is None:
        if time.monotonic() - start > timeout:
            _kill(process)
            raise CommandFailed(f"the command ran past {timeout:.0f} s (log: {log})")
        for folder in complete(output_dir):
            seen.setdefault(str(folder), time.monotonic() - start)
        time.sleep(0.05)
    _finished(process, log)
    return time.monotonic() - start, sorted(seen.values())


def _newest_complete(output_dir: Path) -> str | None:
    found = complete(output_dir)
    return str(max(found, key=lambda p: p.stat().st_mtime).relative_to(output_dir)) if found else None


def attempt_with_kill(
    command: Sequence[str],
    output_dir: Path,
    rng: random.Random,
    max_delay: float,
    kill_in_save: bool = False,
    env: Mapping[str, str] | None = None,
    timeout: float = 3600,
) -> Attempt:
    """Start the command into `output_dir` and kill it once a checkpoint newer than those it starts from is complete
    (after a random delay up to `max_delay`, or when the next checkpoint folder shows up with `kill_in_save`); an
    attempt that ends first is returned as not killed."""
    start = time.monotonic()
    resumed_from = _newest_complete(output_dir)
    before = set(all_checkpoints(output_dir))
    log = output_dir.parent / f"{output_dir.name}.log"
    process = _start(command, output_dir, log, env)
    new: list[Path] = []
    while process.poll() is None and not new:
        if time.monotonic() - start > timeout:
            _kill(process)
            raise CommandFailed(f"the command ran past {timeout:.0f} s (log: {log})")
        new = [folder for folder in complete(output_dir) if folder not in before]
        time.sleep(POLL_S if kill_in_save else 0.05)
    in_save = None
    if kill_in_save:
        seen = set(all_checkpoints(output_dir))
        while process.poll() is None and in_save is None:
            writing = [f for f in all_checkpoints(output_dir) if f not in seen and not is_complete(f)]
            in_save = writing[0] if writing else None
            if in_save is None:
                time.sleep(POLL_S)
    else:
        deadline = time.monotonic() + rng.uniform(0, max_delay)
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
    if process.poll() is not None:
        _finished(process, log)
        return Attempt(time.monotonic() - start, killed=False, resumed_from=resumed_from)
    _kill(process)
    killed_after = _newest_complete(output_dir)
    written = in_save is not None and in_save.is_dir() and not is_complete(in_save)
    half_written = str(in_save.relative_to(output_dir)) if written else None
    return Attempt(time.monotonic() - start, True, resumed_from, killed_after, half_written)


def _without_timings(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if not any(t in k for t in TIMING_KEYS)}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _completions(output_dir: Path) -> dict[str, list[dict[str, Any]]]:
    import pandas as pd

    found = sorted((output_dir / "completions").glob("completions_*.parquet"))
    return {path.name: json.loads(pd.read_parquet(path).to_json(orient="records")) for path in found}


def compare_runs(expected: Path, actual: Path) -> list[str]:
    """Every way the runs in `actual` differ from those in `expected` (`run_dirs`): per-step log, weights, GRPO
    completions."""
    names = [
        {str(run.relative_to(top)) for run in run_dirs(top) if (run / "trainer_state.json").is_file()}
        for top in (expected, actual)
    ]
    if not names[0]:
        return [f"{expected} holds no finished run (trainer_state.json)"]
    differences = [f"runs {sorted(names[1])}, expected {sorted(names[0])}"] if names[0] != names[1] else []
    for name in sorted(names[0] & names[1]):
        differences += [f"{name}: {d}" if name != "." else d for d in _compare_run(expected / name, actual / name)]
    return differences


def _compare_run(expected: Path, actual: Path) -> list[str]:
    differences = []
    logs = [json.loads((run / "trainer_state.json").read_text())["log_history"] for run in (expected, actual)]
    if len(logs[0]) != len(logs[1]):
        differences.append(f"log_history has {len(logs[1])} entries, expected {len(logs[0])}")
    for a, b in zip(*logs):
        a, b = _without_timings(a), _without_timings(b)
        if a != b:
            keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            step = a.get("step", "?")
            differences += [f"step {step} {k}: {b.get(k)!r}, expected {a.get(k)!r}" for k in keys]
    for name in WEIGHT_FILES:
        hashes = [_sha256(run / name) if (run / name).exists() else None for run in (expected, actual)]
        if hashes[0] != hashes[1]:
            differences.append(f"{name} differs (sha256 {hashes[1]}, expected {hashes[0]})")
    completions = [_completions(run) for run in (expected, actual)]
    if completions[0].keys() != completions[1].keys():
        differences.append(f"completion logs {sorted(completions[1])}, expected {sorted(completions[0])}")
    for name in sorted(completions[0].keys() & completions[1].keys()):
        if completions[0][name] != completions[1][name]:
            differences.append(f"{name}: other prompts, completions or rewards")
    return differences


def probe(
    command: Sequence[str],
    work: Path,
    kills: int = 1,
    seed: int = 0,
    kill_in_save: bool = False,
    env: Mapping[str, str] | None = None,
    timeout: float = 3600,
) -> ProbeResult:
    """Run `command` uninterrupted, then killed `kills` times and rerun to its end; compare (see the module)."""
    rng = random.Random(seed)
    uninterrupted, times = run_to_end(command, work / "uninterrupted", env, timeout)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    gap = statistics.median(gaps) if gaps else uninterrupted / 2
    attempts: list[Attempt] = []
    killed = work / "killed"
    while sum(a.killed for a in attempts) < kills:
        attempt = attempt_with_kill(command, killed, rng, gap, kill_in_save, env, timeout)
        attempts.append(attempt)
        logger.info("attempt %d: %s", len(attempts), attempt)
        if not attempt.killed:
            break
    if not attempts or attempts[-1].killed:
        seconds, _ = run_to_end(command, killed, env, timeout)
        attempts.append(Attempt(seconds, killed=False, resumed_from=attempts[-1].killed_after if attempts else None))
    return ProbeResult(uninterrupted, gap, attempts, compare_runs(work / "uninterrupted", killed))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="folder of the two runs (uninterrupted/, killed/)")
    parser.add_argument("--kills", type=int, default=1, help="kills of the second run")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill times")
    parser.add_argument("--kill-in-save", action="store_true", help="kill while a checkpoint is being written")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds a single start may run")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the training command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the training command after --")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        result = probe(command, args.work, args.kills, args.seed, args.kill_in_save, timeout=args.timeout)
    except CommandFailed as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result.summary(), indent=1))
    verdict = "resumed bit for bit" if not result.differences else f"{len(result.differences)} differences"
    print(f"{result.kills} kill(s): {verdict}; {result.seconds_lost_per_kill:.1f} s lost per kill")
    return 0 if not result.differences else 1


if __name__ == "__main__":
    sys.exit(main())
