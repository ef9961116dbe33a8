"""GRPO reward throughput: completions scored per second by each domain reward on a realistic mixed batch.

Each reward scores a batch of completions made from real rows (sampled DSL programs, a small RTCE benchmark, an NL
suite): mostly correct or wrong answers, some malformed ones (empty, truncated, garbage) and, for the rewards that
run code or decode data in the sandbox, a few hostile ones (endless loops, huge allocations, decoder blow-ups) that
cost their timeout. Each reward is made once (pools of one worker per core, started before the timing) and scores
the batch `--repeats` times; the figures are medians, and every repeat's verdict counts must agree. Writes the
`rewards` section of docs/benchmarks.md.

    python bench/bench_rewards.py                  # 512 completions per reward, 3 repeats (~3 min)
    python bench/bench_rewards.py --count 128 --repeats 1 --no-doc
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import benchutil
from benchutil import fmt_rate, invocation, machine_check, publish, run_header

from dsl.expr.procedural import render_procedure
from dsl.expr.rl_data import nl_rl_rows
from dsl.expr.serialize import ARITHMETIC, parse_sexpr, to_infix
from dsl.expr.suite import SuiteConfig, build_suite
from dsl.program import render_program, render_python
from dsl.sampler import sample_program
from dsl.seqcoder import to_seqcoder_rl_row
from kt_train.rewards import Reward, get_reward
from tracegen.benchmark import build_benchmark
from tracegen.rl_data import rtce_rl_rows

KEY = "rewards"
benchutil.SECTIONS.setdefault(KEY, "Rewards (GRPO)")


@dataclass
class Batch:
    """The completions one reward scores, with the dataset columns it reads and how they were made."""

    reward: str
    options: dict[str, Any]
    completions: list[str]
    columns: dict[str, list[Any]]
    mix: str
    hostile: frozenset[int] = frozenset()  # indices of the hostile completions

    def without_hostile(self) -> Batch:
        keep = [i for i in range(len(self.completions)) if i not in self.hostile]
        columns = {key: [values[i] for i in keep] for key, values in self.columns.items()}
        return Batch(self.reward, self.options, [self.completions[i] for i in keep], columns, self.mix)


def pick(rng: random.Random, shares: dict[str, float]) -> str:
    return rng.choices(list(shares), weights=list(shares.values()))[0]


def kt_batch(count: int, seed: int, mode: str) -> Batch:
    rng = random.Random(f"bench-rewards:kt:{seed}")
    shares = {"correct": 0.55, "wrong": 0.2, "fenced": 0.1, "malformed": 0.13, "hostile": 0.02}
    completions, sequences, hostile = [], [], set()
    for index in range(count):
        program, values = sample_program(rng)
        text = render_program(program) if mode == "dsl" else render_python(program)
        kind = pick(rng, shares)
        if kind == "wrong":
            values = [*values, 7]  # the program is right for another sequence
        elif kind == "fenced":
            text = f"Here is the program:\n```\n{text}\n```"
        elif kind == "malformed":
            text = rng.choice(["", "I cannot do that.", text[: len(text) // 2], "output = "])
        elif kind == "hostile":
            hostile.add(index)
            text = (
                "sequence_1 = range_func_up(0, 10000000)\noutput = sequence_1"
                if mode == "dsl"
                else rng.choice(["while True:\n    pass", "x = bytearray(10**11)\noutput = [1]"])
            )
        completions.append(text)
        sequences.append(to_seqcoder_rl_row({"sequence": values})["sequence"])
    mix = (
        "55% correct (sampled programs), 20% wrong (the program of another sequence), 10% fenced in prose, "
        "13% malformed, 2% hostile"
    )
    what = "over the interpreter's size limit" if mode == "dsl" else "endless loops, 10^11-byte allocations"
    columns = {"sequence": sequences}
    return Batch("kt_compression", {"mode": mode}, completions, columns, f"{mix} ({what})", frozenset(hostile))


def answer(value: Any, decoded: Any = None, roundtrip: bool = False) -> str:
    body = {"output": value, "decoded": decoded} if roundtrip else {"output": value}
    return f"Step by step, the value is this.\n[ANSWER]\n{json.dumps(body, ensure_ascii=False)}\n[/ANSWER]"


def rtce_batches(count: int, seed: int, bench_dir: Path) -> list[Batch]:
    build_benchmark(bench_dir, seed=seed, num_inputs=60, progress=False)
    rows = rtce_rl_rows(bench_dir)
    rng = random.Random(f"bench-rewards:rtce:{seed}")
    tasks = [r for r in rows if r["task"] != "roundtrip"]
    trips = [r for r in rows if r["task"] == "roundtrip"]
    batches = []
    completions, chosen = [], []
    for _ in range(count):
        row, other = rng.choice(tasks), rng.choice(tasks)
        kind = pick(rng, {"correct": 0.5, "wrong": 0.3, "malformed": 0.2})
        if kind == "correct":
            text = answer(json.loads(row["answer_json"]))
        elif kind == "wrong":
            text = answer(json.loads(other["answer_json"]))
        else:
            text = rng.choice(["", "The answer is 5.", answer(json.loads(row["answer_json"]))[:40]])
        completions.append(text)
        chosen.append(row)
    columns = {key: [r[key] for r in chosen] for key in ("answer_json", "task")}
    mix = "4 prediction tasks x 4 algorithms: 50% correct, 30% another row's answer, 20% malformed"
    batches.append(Batch("rtce_answer", {}, completions, columns, mix))
    completions, chosen, hostile = [], [], set()
    for index in range(count):
        row = rng.choice(trips)
        z, x = json.loads(row["answer_json"]), row["x"]
        kind = pick(rng, {"correct": 0.45, "self": 0.2, "wrong_z": 0.15, "malformed": 0.15, "hostile": 0.05})
        if kind == "correct":
            text = answer(z, x, roundtrip=True)
        elif kind == "self":
            text = answer(x, x, roundtrip=True)  # the identity map: the decoder cannot decode it
        elif kind == "wrong_z":
            text = answer(json.loads(rng.choice(trips)["answer_json"]), x, roundtrip=True)
        elif kind == "malformed":
            text = rng.choice(["", answer(z, roundtrip=False), answer(z, x, roundtrip=True)[:50]])
        else:
            hostile.add(index)
            row = rng.choice([r for r in trips if r["algorithm"] in ("lzw", "rle")])
            z = [104, *range(256, 256 + 200_000)] if row["algorithm"] == "lzw" else [["a", 10**10]]
            text = answer(z, row["x"], roundtrip=True)
        completions.append(text)
        chosen.append(row)
    columns = {key: [r[key] for r in chosen] for key in ("x", "algorithm", "freq_json", "task")}
    mix = (
        "round-trip rows of 4 algorithms: 45% true z and x, 20% identity z = x, 15% another input's z, 15% "
        "malformed, 5% hostile (LZW codes that grow the dictionary quadratically, an RLE run of 10^10)"
    )
    batches.append(Batch("rtce_roundtrip", {}, completions, columns, mix, frozenset(hostile)))
    return batches


def nl_batch(count: int, seed: int) -> Batch:
    suite = build_suite(SuiteConfig(max_skeletons=4, instances=2)).rows
    rows = nl_rl_rows(suite)
    rng = random.Random(f"bench-rewards:nl:{seed}")
    completions, chosen = [], []
    for _ in range(count):
        row = rng.choice(rows)
        node = parse_sexpr(row["expression"])
        kind = pick(rng, {"correct": 0.45, "wrong": 0.2, "leak": 0.15, "prose": 0.1, "malformed": 0.1})
        if kind == "correct":
            text = render_procedure(node, "arithmetic", rng)
        elif kind == "wrong":  # another root operator
            sexpr = row["expression"]
            other = rng.choice([op for op in "+-*/" if op != sexpr[1]])
            text = render_procedure(parse_sexpr(f"({other}{sexpr[2:]}"), "arithmetic", rng)
        elif kind == "leak":
            text = "Compute " + re.sub(r"\b([A-H])\b", r"{\1}", to_infix(node, ARITHMETIC)) + "."
        elif kind == "prose":
            text = "A farmer has " + ", ".join(f"{{{v}}}" for v in dict.fromkeys(node.variables())) + " cows."
        else:
            text = rng.choice(["", "Word problem:", "I am not sure."])
        completions.append(text)
        chosen.append(row)
    columns = {key: [r[key] for r in chosen] for key in ("expression", "domain")}
    mix = (
        "arithmetic suite rows: 45% procedural word problems of the row, 20% of the row with another root "
        "operator, 15% the infix expression with placeholders (leak), 10% free prose, 10% malformed"
    )
    return Batch("nl_roundtrip", {}, completions, columns, mix)


@dataclass
class Run:
    reward: str
    options: str
    variant: str
    repeat: int
    completions: int
    wall_s: float
    verdicts: dict[str, int]

    @property
    def rate(self) -> float:
        return self.completions / self.wall_s


def cold_caches(reward: str) -> None:
    """Forget the NL oracle's parses and equivalences (sympy), so every repeat pays for them as new answers do."""
    if reward == "nl_roundtrip":
        from eval.nl import oracle

        for cached in (oracle._parse, oracle._equivalent, oracle._target_value):
            cached.cache_clear()


def measure(batch: Batch, repeats: int, workers: int) -> tuple[list[Run], float]:
    """The batch (and, for a sandboxed reward, the batch without its hostile completions) scored `repeats` times by
    one reward; also the seconds of the reward's first call."""
    pooled = batch.reward in ("rtce_roundtrip", "kt_compression") and batch.options.get("mode") != "dsl"
    options = {**batch.options, **({"workers": workers} if pooled else {})}
    reward: Reward = get_reward(batch.reward, **options)
    warm = {key: values[:2] for key, values in batch.columns.items()}
    start = time.perf_counter()
    reward(completions=batch.completions[:2], **warm)  # pools started, modules imported
    startup = time.perf_counter() - start
    label = ", ".join(f"{k}={v}" for k, v in batch.options.items()) or "defaults"
    variants = [("mixed", batch)] + ([("no hostile", batch.without_hostile())] if pooled and batch.hostile else [])
    runs = []
    for variant, scored in variants:
        for repeat in range(1, repeats + 1):
            seen: dict[str, list[str]] = {}
            # distinct program texts per repeat: identical Python programs run once per call
            python = batch.options.get("mode") == "python"
            texts = [f"{t}\n# {repeat}" if python and t else t for t in scored.completions]
            cold_caches(batch.reward)
            start = time.perf_counter()
            reward(completions=texts, log_extra=seen.__setitem__, **scored.columns)
            wall = time.perf_counter() - start
            verdicts = dict(sorted(Counter(seen[f"{reward.name}_verdict"]).items()))
            print(f"{batch.reward} ({label}, {variant}), repeat {repeat}: {wall:.2f} s {verdicts}", file=sys.stderr)
            runs.append(Run(batch.reward, label, variant, repeat, len(texts), wall, verdicts))
        if len({json.dumps(r.verdicts) for r in runs if r.variant == variant}) != 1:
            raise SystemExit(f"{batch.reward}: the repeats disagree on the verdicts: {[r.verdicts for r in runs]}")
    close: Callable[[], None] | None = getattr(reward, "close", None)
    if close is not None:
        close()
    return runs, startup


def report(results: list[tuple[Batch, list[Run], float]], command: str, machine: str, workers: int) -> str:
    lines = [
        *run_header(command),
        "",
        "| reward | options | batch | completions | wall s (median) | completions/s | first call s |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for _, runs, startup in results:
        for variant in dict.fromkeys(r.variant for r in runs):
            group = [r for r in runs if r.variant == variant]
            wall = statistics.median(r.wall_s for r in group)
            lines.append(
                f"| `{group[0].reward}_reward` | {group[0].options} | {variant} | {group[0].completions:,} | "
                f"{wall:.2f} | {fmt_rate(group[0].completions / wall)} | {startup:.2f} |"
            )
    lines += [
        "",
        "Every repeat:",
        "",
        "| reward | options | batch | repeat | wall s | completions/s |",
        "|---|---|---|---:|---:|---:|",
    ]
    for _, runs, _ in results:
        lines += [
            f"| {r.reward} | {r.options} | {r.variant} | {r.repeat} | {r.wall_s:.2f} | {fmt_rate(r.rate)} |"
            for r in runs
        ]
    lines += ["", "Batches and verdicts of the mixed batches (every repeat agreed):", ""]
    for batch, runs, _ in results:
        lines.append(f"- `{batch.reward}` ({runs[0].options}): {batch.mix}. Verdicts: {runs[0].verdicts}.")
    lines += [
        "",
        f"- Sandboxed rewards (`kt_compression` with mode=python, `rtce_roundtrip`) run on {workers} workers (one per "
        "core), 5 s and 512 MiB per program or decoder run, own uid, no network: a hostile completion costs up to "
        "its timeout or the time to exhaust its memory, so the few in a mixed batch take most of its wall time "
        "(`no hostile`: the same batch without them). DSL mode runs the interpreter in process. `nl_roundtrip` uses "
        "the parser extractor (a model extractor adds its generation time); the oracle's caches are cleared before "
        "each repeat.",
        "- First call: the reward's first call, on 2 completions (pool start-up, imports), not in the figures.",
        f"- {machine}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=512, help="completions per reward")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    args = parser.parse_args(argv)
    workers = os.cpu_count() or 1
    machine = machine_check(workers, skip=False)
    with tempfile.TemporaryDirectory() as tmp:
        batches = [
            kt_batch(args.count, args.seed, "dsl"),
            kt_batch(args.count, args.seed, "python"),
            *rtce_batches(args.count, args.seed, Path(tmp) / "rtce"),
            nl_batch(args.count, args.seed),
        ]
    results = [(batch, *measure(batch, args.repeats, workers)) for batch in batches]
    body = report(results, invocation("bench_rewards.py", argv), machine, workers)
    return publish(KEY, body, args.no_doc)


if __name__ == "__main__":
    sys.exit(main())
