"""The default RTCE SFT corpus pipeline: benchmark -> traces -> template translations -> held-out ids -> SFT data.

Each stage writes into its own folder of `output_dir` and is skipped when its completion marker (the `summary.json`
every stage writes last) exists, so a killed build resumes and a finished one is a cache hit. Deterministic for a
given seed. Layout: `benchmark/`, `traces/`, `translations/`, `eval_ids.json`, `sft/<algorithm>/`, `sft/all/`.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kt_train.stages import SUMMARY_FILE

if TYPE_CHECKING:
    from tracegen.inputs import LengthRange

EVAL_IDS_FILE = "eval_ids.json"
FORMAT = 2
"""The version of what the stages write (part of the cache key): raised when their files change, so a corpus cached by
older code is never taken for a current one."""


@dataclass(frozen=True)
class CorpusSettings:
    """What the default corpus is built from; `key()` names its cache folder."""

    seed: int = field(default=42, metadata={"help": "seed of the benchmark inputs and of the held-out choice"})
    num_inputs: int = field(default=250, metadata={"help": "benchmark inputs (the paper: 250)"})
    eval_fraction: float = field(
        default=0.2, metadata={"help": "share of the inputs held out for evaluation (spread over the categories)"}
    )
    template_max_steps: int = field(default=40, metadata={"help": "steps the template translator narrates"})
    prompt_style: str = field(
        default="paper", metadata={"help": "how the benchmark frames its prompts (`tracegen.prompts`)"}
    )
    input_lengths: tuple[int, int] | None = field(
        default=None,
        metadata={"help": "(min, max): inputs cut to windows of that many characters (None: the paper's lengths)"},
    )
    completions: str = field(
        default="trace",
        metadata={"help": "assistant turns: trace (narrated execution + answer), answer (the answer alone), both"},
    )

    def __post_init__(self) -> None:
        from tracegen.inputs import LengthRange
        from tracegen.prompts import PROMPT_STYLES
        from tracegen.sft_data import COMPLETIONS

        if self.prompt_style not in PROMPT_STYLES:
            raise ValueError(f"prompt_style must be one of {', '.join(PROMPT_STYLES)}, got {self.prompt_style!r}")
        if self.completions not in COMPLETIONS:
            raise ValueError(f"completions must be one of {', '.join(COMPLETIONS)}, got {self.completions!r}")
        if self.input_lengths is not None:
            object.__setattr__(self, "input_lengths", tuple(self.input_lengths))
            LengthRange(*self.input_lengths)  # checks the range
        if self.num_inputs < 1:
            raise ValueError("num_inputs must be >= 1")
        if not 0.0 <= self.eval_fraction < 1.0:
            raise ValueError("eval_fraction must be in [0, 1)")
        if self.template_max_steps < 2:
            raise ValueError("template_max_steps must be >= 2")

    def lengths(self) -> LengthRange | None:
        from tracegen.inputs import LengthRange

        return None if self.input_lengths is None else LengthRange(*self.input_lengths)

    def key(self) -> str:
        """The cache folder's name; settings at their off default leave it as older corpora had it."""
        off = {"input_lengths": None, "completions": "trace"}
        key = {k: v for k, v in asdict(self).items() if off.get(k, object()) != v} | {"format": FORMAT}
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]
        return f"rtce-sft-seed{self.seed}-n{self.num_inputs}-{digest}"


def choose_eval_ids(items: list[dict[str, Any]], fraction: float, seed: int) -> list[str]:
    """Held-out item ids: `int(fraction * len(items))` of them, spread over the categories (round robin over the
    categories, each category's ids in a seeded order), so every category is held out about equally."""
    by_category: dict[str, list[str]] = defaultdict(list)
    for item in items:
        by_category[item["category"]].append(item["id"])
    queues = []
    for category, ids in sorted(by_category.items()):
        order = sorted(ids)
        random.Random(f"eval-ids/{seed}/{category}").shuffle(order)
        queues.append(order)
    round_robin = [ids[i] for i in range(max(map(len, queues), default=0)) for ids in queues if i < len(ids)]
    return sorted(round_robin[: int(fraction * len(items))])


def _stage(directory: Path, build: Callable[[], Any]) -> None:
    if not (directory / SUMMARY_FILE).is_file():
        build()


def build_rtce_benchmark(
    output_dir: Path | str, settings: CorpusSettings | None = None, progress: bool = True
) -> tuple[Path, Path]:
    """The first stages of the default corpus under `output_dir`: the benchmark and the held-out ids (what GRPO
    needs); return their paths. Built once, reused after."""
    from tracegen.benchmark import build_benchmark, read_corpus

    settings = settings or CorpusSettings()
    root = Path(output_dir)
    root.mkdir(parents=True, exist_ok=True)
    benchmark = root / "benchmark"
    _stage(
        benchmark,
        lambda: build_benchmark(
            benchmark,
            settings.seed,
            settings.num_inputs,
            progress=progress,
            style=settings.prompt_style,
            lengths=settings.lengths(),
        ),
    )
    eval_ids_path = root / EVAL_IDS_FILE
    if not eval_ids_path.is_file():
        items = read_corpus(benchmark)
        eval_ids = choose_eval_ids(items, settings.eval_fraction, settings.seed)
        eval_ids_path.write_text(json.dumps(eval_ids, indent=1) + "\n", encoding="utf-8")
    if not (root / "settings.json").is_file():
        (root / "settings.json").write_text(json.dumps(asdict(settings), indent=2) + "\n", encoding="utf-8")
    return benchmark, eval_ids_path


def build_rtce_sft_corpus(
    output_dir: Path | str, settings: CorpusSettings | None = None, workers: int | None = None, progress: bool = True
) -> Path:
    """Build (or finish, or reuse) the corpus under `output_dir`; return `output_dir`."""
    from tracegen.sft_data import build_sft_data
    from tracegen.traces import collect_traces
    from tracegen.translate import translate_traces

    settings = settings or CorpusSettings()
    root = Path(output_dir)
    benchmark, eval_ids_path = build_rtce_benchmark(root, settings, progress)
    traces, translations, sft = (root / n for n in ("traces", "translations", "sft"))
    _stage(traces, lambda: collect_traces(benchmark, traces, workers=workers, progress=progress))
    _stage(
        translations,
        lambda: translate_traces(traces, translations, progress=progress, max_steps=settings.template_max_steps),
    )
    _stage(
        sft,
        lambda: build_sft_data(
            translations, sft, benchmark_dir=benchmark, eval_ids=eval_ids_path, completions=settings.completions
        ),
    )
    return root


__all__ = ["EVAL_IDS_FILE", "CorpusSettings", "build_rtce_benchmark", "build_rtce_sft_corpus", "choose_eval_ids"]
