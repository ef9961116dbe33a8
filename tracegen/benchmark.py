"""Build the RTCE benchmark: unified JSON corpus, raw per-algorithm files and a Hugging Face (Parquet) dataset."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from tqdm import tqdm

from kt_train.hf_dataset import CardInfo, row_id, write_hf_dataset
from kt_train.stages import SUMMARY_FILE
from tracegen.inputs import InputItem, LengthRange, generate_inputs
from tracegen.prompts import PromptStyle
from tracegen.tasks import TASKS, Algorithm, make_task, safe_decode, system_message

if TYPE_CHECKING:
    from tracegen.release_prompts import ReleasePrompt

CORPUS_FILE = "rtce.json"
HF_COLUMNS = ("id", "item_id", "family", "category", "algorithm", "task", "prompt", "answer_json", "roundtrip_ok")
HF_COLUMNS += ("label_exact",)
BOOL_COLUMNS = ("roundtrip_ok", "label_exact")
CARD_DESCRIPTION = """Prompts for the four RTCE prediction tasks (O/P Pred, O/P Pred-I, I/P Pred, I/P Pred-I;
papers 000 and 001) over LZW, arithmetic encoding, RLE and Huffman coding. One row per (input, algorithm, task), id
`<item>/<algorithm>/<task>`; `answer_json` is the reference value of `{{"output": <value>}}` as JSON. Rows with
`roundtrip_ok = false` come from inputs where decoding the encoding does not give the input back (float arithmetic
coding); rows with `label_exact = false` have a label the shown code does not return (the release's: x for I/P Pred,
enc(x) for O/P Pred-I). Prompts in the `{style}` style{system}. Score a model on it with `kt eval rtce`.

Inputs: {source}, {num_items} inputs, {num_rows} rows.
"""


def default_algorithms(huffman_target: str = "triple") -> Mapping[str, Algorithm]:
    """The registry of `tracegen.algorithms` with Huffman in `huffman_target` (imported lazily)."""
    from tracegen.algorithms import algorithms_for

    return algorithms_for(huffman_target)


def roundtrips(algorithm: Algorithm, text: str) -> bool:
    """True when decoding the encoding of `text` gives `text` back exactly."""
    return safe_decode(algorithm, algorithm.encode(text), algorithm.freq(text)) == text


def algorithm_entry(
    algorithm: Algorithm, text: str, style: PromptStyle = "paper", rendered: Mapping[str, ReleasePrompt] | None = None
) -> dict[str, Any]:
    """freq, z, roundtrip_ok and the four task records of one input under one algorithm (prompts `rendered` by the
    release's code for the `release` style, with where they show the given value: `given_span`)."""
    tasks = {}
    for task in TASKS:
        release = rendered[task.value] if rendered is not None else None
        record = make_task(algorithm, task, text, style, prompt=release.user if release is not None else None)
        tasks[task.value] = {"prompt": record.prompt, "answer": record.answer, "answer_json": record.answer_json}
        tasks[task.value]["label_exact"] = record.label_exact
        if release is not None:
            tasks[task.value]["given_span"] = list(release.given_span)
    return {
        "freq": algorithm.freq(text),
        "z": algorithm.to_json(algorithm.encode(text)),
        "roundtrip_ok": roundtrips(algorithm, text),
        "tasks": tasks,
    }


def corpus_entry(
    item: InputItem,
    algorithms: Mapping[str, Algorithm],
    style: PromptStyle = "paper",
    rendered: Mapping[str, Mapping[str, ReleasePrompt]] | None = None,
) -> dict[str, Any]:
    """One item of the unified corpus (`rendered`: its release prompts per algorithm, `release` style)."""
    return {
        "id": item.id,
        "family": item.family,
        "category": item.category,
        "input": item.text,
        "length": len(item.text),
        "metadata": item.metadata,
        "algorithms": {
            name: algorithm_entry(alg, item.text, style, rendered[name] if rendered else None)
            for name, alg in algorithms.items()
        },
    }


def hf_rows(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The dataset rows of one corpus item: one per (algorithm, task)."""
    rows = []
    for name, per_alg in entry["algorithms"].items():
        for task, record in per_alg["tasks"].items():
            values = (row_id(entry["id"], name, task), entry["id"], entry["family"], entry["category"], name, task)
            values += (record["prompt"], record["answer_json"], per_alg["roundtrip_ok"], record["label_exact"])
            rows.append(dict(zip(HF_COLUMNS, values, strict=True)))
    return rows


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def write_raw(output: Path, corpus: list[dict[str, Any]], names: list[str]) -> None:
    """raw/<algorithm>.jsonl: id, input, z, freq per line."""
    for name in names:
        lines = []
        for entry in corpus:
            per_alg = entry["algorithms"][name]
            lines.append(
                _dump({"id": entry["id"], "input": entry["input"], "z": per_alg["z"], "freq": per_alg["freq"]})
            )
        _write_text(output / "raw" / f"{name}.jsonl", "\n".join(lines) + "\n")


def write_hf(
    output: Path, corpus: list[dict[str, Any]], source: str, style: PromptStyle, command: str, system: str | None
) -> int:
    """hf/: the rows as a dataset (`kt_train.hf_dataset`, loadable offline); returns the row count."""
    rows = [row for entry in corpus for row in hf_rows(entry)]
    schema = pa.schema([(col, pa.bool_() if col in BOOL_COLUMNS else pa.string()) for col in HF_COLUMNS])
    note = "" if system is None else f"; send them after the system message `{system}`"
    description = CARD_DESCRIPTION.format(
        source=source, num_items=len(corpus), num_rows=len(rows), style=style, system=note
    )
    info = CardInfo(
        pretty_name="RTCE: round-trip code execution",
        description=description,
        command=command,
        language=("en", "code"),
        tags=("rtce", "code-execution", "compression"),
    )
    write_hf_dataset(output / "hf", {"train": pa.Table.from_pylist(rows, schema=schema)}, info)
    return len(rows)


def summarize(
    corpus: list[dict[str, Any]], names: list[str], settings: dict[str, Any], num_rows: int, system: str | None
) -> dict[str, Any]:
    """The build settings; counts per family, category and algorithm; round-trip failures and, per algorithm and
    task, the prompts whose label the shown code does not return."""
    failures = {name: sum(not e["algorithms"][name]["roundtrip_ok"] for e in corpus) for name in names}
    inexact = {
        name: {t.value: sum(not e["algorithms"][name]["tasks"][t.value]["label_exact"] for e in corpus) for t in TASKS}
        for name in names
    }
    return settings | {
        "system_prompt": system,
        "num_items": len(corpus),
        "num_rows": num_rows,
        "families": dict(sorted(Counter(e["family"] for e in corpus).items())),
        "categories": dict(sorted(Counter(e["category"] for e in corpus).items())),
        "algorithms": {name: len(corpus) for name in names},
        "roundtrip_failures": failures,
        "inexact_labels": inexact,
    }


def build_benchmark(
    output: Path,
    seed: int = 42,
    num_inputs: int = 250,
    *,
    algorithms: Mapping[str, Algorithm] | None = None,
    progress: bool = True,
    style: PromptStyle = "paper",
    release_dir: Path | str | None = None,
    families: Sequence[str] | None = None,
    huffman_target: str | None = None,
    lengths: LengthRange | None = None,
) -> dict[str, Any]:
    """Write rtce.json, raw/<algorithm>.jsonl, hf/ and summary.json under `output`; return the summary.

    Inputs are generated (`seed`, `num_inputs`, optionally only `families`) or, with `release_dir`, the paper's
    released inputs in their order (`tracegen.release`; refused where our encoders do not reproduce its outputs).
    `style` frames the prompts (`tracegen.prompts`; `release`: the release's own, by its code in `release_dir`),
    `huffman_target` is Huffman's z (`triple`, or `bytes`, the default and only choice of the `release` style),
    `lengths` cuts generated inputs to short windows (`tracegen.inputs.LengthRange`).
    Byte-identical output for identical arguments (no timestamps; every dict is built in a fixed order).
    """
    output = Path(output)
    huffman_target = _huffman_target(style, huffman_target, release_dir)
    algorithms = default_algorithms(huffman_target) if algorithms is None else algorithms
    names = list(algorithms)
    settings: dict[str, Any] = {"prompt_style": style, "huffman_target": huffman_target}
    if release_dir is not None:
        items = release_items(Path(release_dir), algorithms)
        settings |= {"source": "release", "seed": None}
        source = f"the paper's released inputs ({Path(release_dir).name})"
    else:
        items = generate_inputs(seed=seed, num_inputs=num_inputs, families=families, lengths=lengths)
        settings |= {"source": "generated", "seed": seed, "families": sorted({i.family for i in items})}
        if lengths is not None:
            settings["input_lengths"] = [lengths.min_chars, lengths.max_chars]
        source = f"generated, seed {seed}"
    system, rendered = system_message(style), None
    if style == "release":
        from tracegen.release_prompts import release_system_message, render_release_prompts

        assert release_dir is not None  # checked by _huffman_target
        rendered = render_release_prompts(release_dir, items, algorithms)
        system = release_system_message(rendered)
    corpus = [
        corpus_entry(item, algorithms, style, {name: p[index] for name, p in rendered.items()} if rendered else None)
        for index, item in enumerate(tqdm(items, desc="RTCE items", disable=not progress))
    ]
    _write_text(output / CORPUS_FILE, json.dumps(corpus, ensure_ascii=False, indent=1) + "\n")
    write_raw(output, corpus, names)
    num_rows = write_hf(output, corpus, source, style, _command(settings, num_inputs, release_dir), system)
    summary = summarize(corpus, names, settings, num_rows, system)
    _write_text(output / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    return summary


def _huffman_target(style: PromptStyle, target: str | None, release_dir: Path | str | None) -> str:
    """Huffman's z for `style`: `triple` by default; the `release` style needs the release and its z, the bytes."""
    if style != "release":
        return target or "triple"
    if release_dir is None:
        raise ValueError("--prompt-style release renders the release's own prompts: it needs --release-dir")
    if target == "triple":
        raise ValueError(
            "--prompt-style release asks for the release's Huffman z, the bytes: use --huffman-target bytes"
        )
    return "bytes"


def _command(settings: dict[str, Any], num_inputs: int, release_dir: Path | str | None) -> str:
    """The `kt rtce build` command that makes this benchmark."""
    if release_dir is not None:
        source = f"--release-dir {Path(release_dir).name}"
    else:
        source = f"--seed {settings['seed']} --num-inputs {num_inputs} --families {' '.join(settings['families'])}"
        if "input_lengths" in settings:
            source += " --input-lengths {} {}".format(*settings["input_lengths"])
    return (
        f"kt rtce build {source} --prompt-style {settings['prompt_style']} "
        f"--huffman-target {settings['huffman_target']} --output OUT"
    )


def release_items(release_dir: Path, algorithms: Mapping[str, Algorithm]) -> list[InputItem]:
    """The release's inputs, refused (ValueError) where an algorithm of ours does not reproduce its outputs."""
    from tracegen.release import check_release_outputs, release_inputs

    items = release_inputs(release_dir)
    bad = {name: idx for name, idx in check_release_outputs(release_dir, dict(algorithms)).items() if idx}
    if bad:
        where = "; ".join(f"{name}: {len(idx)} inputs (first {idx[0]})" for name, idx in bad.items())
        raise ValueError(f"our encoders do not reproduce the release's outputs ({where})")
    return items


def read_corpus(benchmark_dir: Path | str) -> list[dict[str, Any]]:
    """The unified corpus (`rtce.json`) of a benchmark folder, in the file's order: the one reader of that file."""
    path = Path(benchmark_dir) / CORPUS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no {CORPUS_FILE} in {benchmark_dir} (build it with `kt rtce build`)")
    return json.loads(path.read_text(encoding="utf-8"))


def load_corpus(benchmark_dir: Path | str) -> list[dict[str, Any]]:
    """The unified corpus (`rtce.json`) of a benchmark folder, sorted by item id."""
    return sorted(read_corpus(benchmark_dir), key=lambda item: item["id"])


def load_summary(benchmark_dir: Path | str) -> dict[str, Any]:
    """The build summary of a benchmark folder ({} for a folder built before summaries named their prompt style)."""
    path = Path(benchmark_dir) / SUMMARY_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


__all__ = [
    "CORPUS_FILE",
    "HF_COLUMNS",
    "SUMMARY_FILE",
    "build_benchmark",
    "corpus_entry",
    "hf_rows",
    "load_corpus",
    "load_summary",
    "read_corpus",
    "roundtrips",
]
