"""The main job's levers, measured: variants of `recipes/smollm2-135m/sft_rtce/config_cpu.yaml`, each trained and
scored against the base model on the same held-out inputs, one after the other on this machine.

Each variant is the demo config plus command-line overrides (`--algorithms rle --completions both`, ...); it trains
into its own folder under `--output`, runs the recipe's evaluation (base vs adapter, paired bootstrap) and adds one
row per (algorithm, task, metric) of its `learning` table to `levers.jsonl`, with the wall time of the variant. A
variant already in `levers.jsonl` is skipped (rerun with another `--output` to measure again). Prints the table as
markdown at the end (what docs/benchmarks.md quotes).

    python bench/bench_rtce_levers.py --output /tmp/levers \\
        --variant "answer=--algorithms rle" \\
        --variant "both=--algorithms rle --completions both --eval_max_new_tokens 768"
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "recipes/smollm2-135m/sft_rtce/config_cpu.yaml"


def run_variant(name: str, overrides: list[str], output: Path, threads: int) -> list[dict]:
    """Train and evaluate one variant; its learning rows with the variant's name and wall seconds."""
    folder = output / name
    command = [
        sys.executable,
        str(ROOT / "recipes/sft_rtce.py"),
        "--config",
        str(CONFIG),
        "--output_dir",
        str(folder),
        "--torch_threads",
        str(threads),
        "--report_to",
        "none",
        "--eval_checkpoints",
        "false",
        "--overwrite_output_dir",
        "true",
        *overrides,
    ]
    start = time.perf_counter()
    subprocess.run(command, check=True, env=os.environ | {"HF_HUB_OFFLINE": "1"})
    seconds = time.perf_counter() - start
    summary = json.loads((folder / "eval" / "summary.json").read_text(encoding="utf-8"))
    steps = {}
    for algorithm_dir in folder.iterdir():
        state = algorithm_dir / "trainer_state.json"
        if state.is_file():
            steps[algorithm_dir.name] = json.loads(state.read_text(encoding="utf-8"))["global_step"]
    return [
        entry | {"variant": name, "overrides": " ".join(overrides), "seconds": round(seconds), "steps": steps}
        for entry in summary["learning"]
    ]


def markdown(rows: list[dict]) -> str:
    """One row per variant, algorithm, task and metric: n, base, adapter, change with its CI, verdict, wall time."""
    lines = [
        "| variant | algorithm | task | metric | n | base % | adapter % | change [95% CI] | verdict | wall s |",
        "|---|---|---|---|---:|---:|---:|---|---|---:|",
    ]
    for r in rows:
        change = f"{100 * r['diff']:+.1f} [{100 * r['ci_low']:+.1f}, {100 * r['ci_high']:+.1f}]"
        lines.append(
            f"| {r['variant']} | {r['algorithm']} | {r['task']} | {r['metric']} | {r['n']} | {100 * r['base']:.1f} "
            f"| {100 * r['adapter']:.1f} | {change} | {r['verdict']} | {r['seconds']} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", required=True, type=Path)
    parser.add_argument("--variant", action="append", required=True, metavar="NAME=OVERRIDES")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    results = args.output / "levers.jsonl"
    done = [json.loads(line) for line in results.read_text().splitlines()] if results.is_file() else []
    for variant in args.variant:
        name, _, overrides = variant.partition("=")
        if any(row["variant"] == name for row in done):
            continue
        rows = run_variant(name, shlex.split(overrides), args.output, args.threads)
        with results.open("a", encoding="utf-8") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)
        done += rows
    print(markdown(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
