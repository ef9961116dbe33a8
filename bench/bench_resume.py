"""Training resumes bit for bit (issue 38): each recipe run once to its end, then killed with SIGKILL at random steps
(and while a checkpoint is written) and rerun with the same command; per-step log, weights and GRPO completions
compared, and the time each kill cost (`kt_train.training.resume_probe`).

    python bench/bench_resume.py [--cases sft_kt sft_kt_in_save grpo_kt sft_rtce sft_rtce_zero3] [--kills 3]

Writes `resume.json` under `--work` and the "Training resume" section of docs/benchmarks.md (unless `--no-doc`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchutil import REPO, invocation, publish, run_header

from dsl.seqcoder import build_kt_corpus
from kt_train.training.resume_probe import PROBE_ENV, launch_command, probe, probe_config
from tracegen.pipeline import CorpusSettings, build_rtce_sft_corpus


def _config(work: Path, recipe_config: str, **overrides: object) -> Path:
    return probe_config(REPO / recipe_config, work, **overrides)


def _command(recipe: str, config: Path, accelerate_config: str = "cpu.yaml") -> list[str]:
    return launch_command(REPO / "recipes" / f"{recipe}.py", config, REPO / "accelerate_configs" / accelerate_config)


def _sft_kt(work: Path) -> list[str]:
    corpus = build_kt_corpus(work / "corpus", num_pairs=400, seed=3, progress=False)
    config = _config(
        work,
        "recipes/seqcoder-tiny/sft_kt/config_10k.yaml",
        dataset_name=str(corpus),
        max_steps=60,
        save_steps=5,
        gradient_accumulation_steps=4,
        evaluations=[],
    )
    return _command("sft_kt", config)


def _rtce(work: Path, accelerate_config: str, accumulation: int) -> list[str]:
    settings = CorpusSettings(num_inputs=8, template_max_steps=4, input_lengths=(3, 10), completions="answer")
    corpus = build_rtce_sft_corpus(work / "corpus", settings, 2, False) / "sft"
    config = _config(
        work,
        "recipes/smollm2-135m/sft_rtce/config_cpu.yaml",
        dataset_name=str(corpus),
        algorithms=["rle"],
        max_steps_by_algorithm={},
        max_steps=8,
        save_steps=2,
        lora_dropout=0.05,
        eval_on_start=False,
        gradient_accumulation_steps=accumulation,
        evaluations=[],
    )
    return _command("sft_rtce", config, accelerate_config)


def _grpo_kt(work: Path) -> list[str]:
    corpus = build_kt_corpus(work / "corpus", num_pairs=40, seed=3, progress=False)
    config = _config(
        work,
        "recipes/smollm2-135m/grpo_kt/config_cpu.yaml",
        dataset_name=str(corpus),
        max_steps=6,
        save_steps=1,
        max_train_samples=12,
        max_completion_length=24,
        log_completions=True,
    )
    return _command("grpo_kt", config)


CASES: dict[str, tuple[str, Callable[[Path], list[str]], bool]] = {  # name -> (what it trains, command, in save)
    "sft_kt": ("sft_kt, SeqCoder tiny, full fine-tuning, 60 steps", _sft_kt, False),
    "sft_kt_in_save": ("sft_kt, killed while a checkpoint is written", _sft_kt, True),
    "grpo_kt": ("grpo_kt, SmolLM2 LoRA, 6 steps of 4 completions", _grpo_kt, False),
    "sft_rtce": ("sft_rtce (RLE), SmolLM2 LoRA (dropout 0.05), 8 steps", lambda w: _rtce(w, "cpu.yaml", 2), False),
    "sft_rtce_zero3": (
        "sft_rtce (RLE) under ZeRO-3, 2 CPU processes, 8 steps",
        lambda w: _rtce(w, "zero3_cpu.yaml", 1),
        False,
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--kills", type=int, default=3, help="kills of each case (1 for the in-save case)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=None, help="folder of the runs (default: a temporary one)")
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args(argv)
    env = {**os.environ, **PROBE_ENV}
    work = args.work or Path(tempfile.mkdtemp(prefix="kt-bench-resume-"))
    results: dict[str, Any] = {}
    for name in args.cases:
        what, make, in_save = CASES[name]
        folder = work / name
        folder.mkdir(parents=True, exist_ok=True)
        kills = 1 if in_save else args.kills
        result = probe(make(folder), folder / "probe", kills, args.seed, in_save, env, timeout=3600)
        results[name] = {"what": what, **result.summary()}
        print(name, json.dumps({k: v for k, v in results[name].items() if k != "attempts"}), flush=True)
    (work / "resume.json").write_text(json.dumps(results, indent=1))
    return publish("resume", report(results), args.no_doc)


def report(results: dict[str, Any]) -> str:
    lines = [*run_header(invocation("bench_resume.py", None)), ""]
    lines += [
        "Each case runs once to its end, then again into another folder where it is killed with SIGKILL a random time",
        "after a new complete checkpoint (up to the time between two checkpoints: a random optimizer step) or the",
        "moment a checkpoint folder appears (in save), and rerun with the same command until it ends. Identical: the",
        "same per-step log (loss, grad norm, learning rate, token counts, rewards), weights sha256 and, for GRPO, the",
        "same prompts, completions and rewards each step. Lost per kill: the killed run's seconds, all its starts",
        "together, less the uninterrupted run's, over the kills (start-up, the steps after the last checkpoint).",
        "",
        "| case | kills | identical | uninterrupted s | between checkpoints s | lost per kill s | resumed from |",
        "|---|---:|---|---:|---:|---:|---|",
    ]
    for result in results.values():
        resumed = ", ".join(a["resumed_from"] or "start" for a in result["attempts"][1:])
        lines.append(
            f"| {result['what']} | {result['kills']} | {'yes' if result['identical'] else 'NO'} | "
            f"{result['uninterrupted_s']:.1f} | {result['checkpoint_gap_s']:.1f} | "
            f"{result['seconds_lost_per_kill']:.1f} | {resumed} |"
        )
    for result in results.values():
        if result["differences"]:
            lines += ["", f"{result['what']}: " + "; ".join(result["differences"][:5])]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
