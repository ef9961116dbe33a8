"""End-to-end benchmark of `kt dsl generate`: wall time and peak memory of the whole process tree.

Runs `kt dsl generate --num-pairs N --workers W` (default 1M pairs, 2 workers) as a subprocess, sampling the VmRSS of
the process and all its descendants every ~0.1 s; then a smaller `--workers 1` run for the per-worker throughput (both
`--repeats` times, alternated); with `--check-determinism`, a `--workers 1` run of the same N whose data/*.parquet must
be byte-identical. Prints a markdown report and rewrites its section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchutil import (
    GIB,
    RunResult,
    fmt_bytes,
    fmt_rate,
    git_revision,
    invocation,
    kt_command,
    load_average,
    machine_check,
    machine_line,
    now,
    run_measured,
    update_doc,
)

TARGET_WALL_S = 60.0
TARGET_RSS = 2 * GIB


@dataclass
class Measured:
    """One `kt dsl generate` run and what it wrote."""

    label: str
    num_pairs: int
    workers: int
    run: RunResult
    manifest: dict[str, Any]
    parquet_sha256: dict[str, str]

    @property
    def pairs_per_s(self) -> float:
        return self.num_pairs / self.run.wall_s

    @property
    def candidates_per_s(self) -> float:
        return self.manifest["candidates"] / self.run.wall_s


def command(num_pairs: int, seed: int, output: Path, workers: int) -> list[str]:
    return [
        *kt_command(),
        "dsl",
        "generate",
        "--num-pairs",
        str(num_pairs),
        "--seed",
        str(seed),
        "--output",
        str(output),
        "--workers",
        str(workers),
        "--quiet",
    ]


def shown(cmd: list[str]) -> str:
    """The command as documented: `kt ...` with the output directory as OUT."""
    words = ["kt", *cmd[1:]]
    words[words.index("--output") + 1] = "OUT"
    return " ".join(words)


def generate(label: str, num_pairs: int, seed: int, workers: int, root: Path, interval: float) -> Measured:
    output = root / f"corpus-{num_pairs}-w{workers}"
    cmd = command(num_pairs, seed, output, workers)
    print(f"running: {shown(cmd)}", file=sys.stderr, flush=True)
    run = run_measured(cmd, interval=interval)
    if run.returncode != 0:
        sys.exit(f"{shown(cmd)} failed with status {run.returncode}:\n{run.output[-4000:]}")
    manifest = json.loads((output / "generation.json").read_text())
    hashes = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((output / "data").glob("*.parquet"))}
    if manifest["stats"]["num_pairs"] != num_pairs:
        sys.exit(f"{label}: expected {num_pairs} pairs, generation.json says {manifest['stats']['num_pairs']}")
    shutil.rmtree(output)
    print(
        f"  {run.wall_s:.1f} s, peak tree RSS {fmt_bytes(run.peak_tree_rss)}, "
        f"max process RSS {fmt_bytes(run.peak_single_rss)}",
        file=sys.stderr,
        flush=True,
    )
    return Measured(label, num_pairs, workers, run, manifest, hashes)


def verdict(ok: bool) -> str:
    return "yes" if ok else "**NO**"


def median_wall(runs: list[Measured]) -> float:
    return statistics.median(m.run.wall_s for m in runs)


def report(
    mains: list[Measured],
    singles: list[Measured],
    serial: Measured | None,
    seed: int,
    interval: float,
    machine: str,
    ran: str,
) -> str:
    """Markdown section: the table of runs, the targets, corpus statistics of the main run and the commands."""
    rows = [
        "| run | pairs | workers | wall s | pairs/s | pairs/s per worker | candidates/s | peak RSS, process tree "
        "| max RSS, one process | processes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in [*mains, *singles, *([serial] if serial else [])]:
        r = m.run
        rows.append(
            f"| {m.label} | {m.num_pairs:,} | {m.workers} | {r.wall_s:.1f} | {fmt_rate(m.pairs_per_s)} "
            f"| {fmt_rate(m.pairs_per_s / m.workers)} | {fmt_rate(m.candidates_per_s)} "
            f"| {fmt_bytes(r.peak_tree_rss)} | {fmt_bytes(max(r.peak_single_rss, r.kernel_maxrss))} "
            f"| {r.max_processes} |"
        )
    main = mains[0]
    wall = median_wall(mains)
    peak = max(m.run.peak_tree_rss for m in mains)
    walls = ", ".join(f"{m.run.wall_s:.1f}" for m in mains)
    stats = main.manifest["stats"]
    length, lines, bits = stats["sequence_length"], stats["num_lines"], stats["bits"]
    notes = []
    if singles:
        one = singles[0]
        ratio = (main.num_pairs / wall) / (one.num_pairs / median_wall(singles))
        notes.append(
            f"Scaling: {main.workers} workers give {ratio:.2f}x the pairs/s of 1 worker ({one.num_pairs:,} pairs; "
            "medians); the serial part (start-up, deduplication, Parquet writing) is included in both."
        )
    if serial is not None:
        notes.append(
            f"Same size on 1 worker: {main.workers} workers give {serial.run.wall_s / wall:.2f}x the pairs/s of the "
            f"{serial.num_pairs:,}-pair `--workers 1` run."
        )
    if serial is not None:
        same = serial.parquet_sha256 == main.parquet_sha256 and bool(serial.parquet_sha256)
        det = (
            f"data/*.parquet of the {main.workers}-worker run byte-identical to those of the `--workers 1` run "
            f"({len(serial.parquet_sha256)} files)"
            if same
            else f"**data/*.parquet of the {main.workers}-worker run differ from those of the `--workers 1` run**"
        )
    else:
        det = "not checked (pass `--check-determinism`)"
    notes.append(f"Determinism: {det}.")
    if machine:
        notes.append(machine)
    main_cmd = shown(command(main.num_pairs, seed, Path("OUT"), main.workers))
    return f"""Measured {now()} at commit {git_revision()} on {machine_line()}.

```
{ran}
# measures: {main_cmd}
```

{chr(10).join(rows)}

Targets for {main.num_pairs:,} pairs on {main.workers} workers:

| target | measured | met |
|---|---:|---|
| wall time <= {TARGET_WALL_S:.0f} s | {wall:.1f} s{f" (median of {walls})" if len(mains) > 1 else ""} \
| {verdict(wall <= TARGET_WALL_S)} |
| peak RSS of the process tree <= {fmt_bytes(TARGET_RSS)} | {fmt_bytes(peak)} | {verdict(peak <= TARGET_RSS)} |

- Wall time is that of the whole `kt` command (interpreter start-up, sampling, deduplication, writing Parquet).
- Peak RSS of the process tree: the largest sum of VmRSS over `kt` and all its descendants (the spawned workers and
  multiprocessing's resource tracker), sampled every {interval} s; pages shared between processes are counted once
  per process, so this over-states the real footprint. "max RSS, one process" is the larger of the sampled maximum
  and the kernel's `ru_maxrss` (from `wait4`).
{chr(10).join(f"- {n}" for n in notes)}

Corpus of the {main.num_pairs:,}-pair run: {main.manifest["candidates"]:,} candidates sampled, \
{main.manifest["duplicates"]:,} duplicates dropped; {stats["total_bytes"]:,} sequence bytes; sequence length \
mean {length["mean"]} / median {length["median"]} / std {length["std"]}; lines per program mean {lines["mean"]} / \
median {lines["median"]}; bits mean {bits["mean"]}."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-pairs", type=int, default=1_000_000, help="Pairs of the main run (default 1M).")
    parser.add_argument("--workers", type=int, default=2, help="Workers of the main run (default 2).")
    parser.add_argument(
        "--single-num-pairs",
        type=int,
        default=200_000,
        help="Pairs of the --workers 1 run for per-worker throughput (default 200k; 0 skips it).",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="Runs of the main and single-worker measurements, alternated (default 1).",
    )
    parser.add_argument("--seed", type=int, default=42, help="Seed passed to kt dsl generate (default 42).")
    parser.add_argument(
        "--check-determinism",
        action="store_true",
        help="Also run the main N with --workers 1 and require byte-identical data/*.parquet (slow).",
    )
    parser.add_argument("--interval", type=float, default=0.1, help="RSS sampling period in seconds (default 0.1).")
    parser.add_argument("--tmp-dir", help="Where to write the corpora (default: a new temporary directory).")
    parser.add_argument(
        "--no-calibrate",
        action="store_true",
        help="Skip measuring how well a pure-Python loop scales on this machine.",
    )
    parser.add_argument("--no-doc", action="store_true", help="Do not update docs/benchmarks.md.")
    args = parser.parse_args(argv)

    machine = machine_check(args.workers, args.no_calibrate)
    root = Path(tempfile.mkdtemp(prefix="kt-bench-", dir=args.tmp_dir))
    size = f"{args.num_pairs // 1000}k" if args.num_pairs < 1_000_000 else f"{args.num_pairs / 1e6:g}M"
    mains: list[Measured] = []
    singles: list[Measured] = []
    serial = None
    try:
        for rep in range(args.repeats):
            suffix = f", run {rep + 1}" if args.repeats > 1 else ""
            label = f"{size}, {args.workers} workers{suffix}"
            mains.append(generate(label, args.num_pairs, args.seed, args.workers, root, args.interval))
            if args.single_num_pairs > 0:
                label = f"{args.single_num_pairs // 1000}k, 1 worker{suffix}"
                singles.append(generate(label, args.single_num_pairs, args.seed, 1, root, args.interval))
        if args.check_determinism:
            serial = generate(f"{size}, 1 worker", args.num_pairs, args.seed, 1, root, args.interval)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    machine += f" Load average at the end: {load_average():.2f}."
    text = report(mains, singles, serial, args.seed, args.interval, machine, invocation("bench_dsl_generate.py", argv))
    print(text)
    if not args.no_doc:
        update_doc("dsl-generate", text)
        print("\nupdated docs/benchmarks.md", file=sys.stderr)
    if median_wall(mains) > TARGET_WALL_S or max(m.run.peak_tree_rss for m in mains) > TARGET_RSS:
        print("warning: a target was missed (see the table)", file=sys.stderr)
    same = serial is None or (serial.parquet_sha256 == mains[0].parquet_sha256 and bool(serial.parquet_sha256))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
