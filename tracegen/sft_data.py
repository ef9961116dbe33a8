"""SFT corpus from trace translations (paper §6.3): two-turn chats, one dataset per algorithm and a combined one.

Each kept `translations.jsonl` record (see `tracegen.translate`) becomes
`messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": reasoning + [ANSWER] block}]`
(`completions="answer"`: the [ANSWER] block alone, row id `.../answer`; `"both"`: a row of each).
The user turn is the RTCE task prompt of the FORWARD run that was traced, so training prompts match the evaluation
prompts of `tracegen.tasks`:

- `encode` records (the encoder traced on x): O/P Pred on x (encoder source, answer z);
- `decode` records (the decoder traced on z): I/P Pred on z (decoder source, answer x), i.e. running the decoder
  forwards, which is exactly what the trace shows (the inverted tasks are not what the traces explain).

With `benchmark_dir` the prompt is taken from its rtce.json; otherwise it is rebuilt with `tracegen.tasks.make_task`
from x (the same text: FREQ_DICT comes from x either way). Records whose item id is in `eval_ids` (a set, or a file
with a JSON list or one id a line) are held out: their rows form the `test` split (held-out loss during training),
never the `train` split; records over `max_chars` characters (of the tokenizer's chat template
rendering when a tokenizer is given, else of the two turns' raw text) are dropped. Output, deterministic:
`output_dir/<algorithm>/` and `output_dir/all/`, each `data/train-00000-of-00001.parquet` (and `data/test-...`)
with a README card (loadable
offline with `datasets.load_dataset(str(dir), split="train")`; `kt_train.hf_dataset`) that gives the rows' token
lengths in a named tokenizer and warns when they exceed TRL's default `max_length`, and `output_dir/summary.json`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from kt_train.hf_dataset import CardInfo, shard_names, write_hf_dataset
from kt_train.models import DEFAULT_MODEL
from kt_train.records import read_jsonl
from kt_train.stages import SUMMARY_FILE
from kt_train.token_lengths import ChatTokenizer, length_card_section, length_stats
from tracegen.tasks import Task, dumps
from tracegen.translate import TRANSLATIONS_FILE, answer_block

PARQUET_FILE = shard_names("train", 1)[0]
COMBINED = "all"
DEFAULT_MAX_CHARS = 32768
COMPLETIONS = ("trace", "answer", "both")
"""Assistant turns: the narrated trace ending in the answer, the answer block alone, or a row of each per record."""
ANSWER_ONLY = "answer"
"""The row-id suffix and `direction` tag of an answer-only row (`<item>/<algorithm>/<direction>/answer`)."""
TASK_OF_DIRECTION = {"encode": Task.OUTPUT_PRED, "decode": Task.INPUT_PRED}
_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("item_id", pa.string()),
        ("algorithm", pa.string()),
        ("direction", pa.string()),
        ("task", pa.string()),
        ("messages", pa.list_(_MESSAGE)),
        ("answer_json", pa.string()),
        ("backend", pa.string()),
        ("num_chars", pa.int64()),
    ]
)
CARD_DESCRIPTION = """Two-turn chats (`messages`: user prompt with the `main_solution` source and the input,
assistant reasoning ending in `[ANSWER]{{"output": <value>}}[/ANSWER]`) made from execution-trace translations (RTCE,
paper 001 §6.3). `encode` rows use the O/P Pred prompt (encoder on x), `decode` rows the I/P Pred prompt (decoder on
z). Row ids are `<item>/<algorithm>/<direction>`.

Rows: {num_rows}.

Rows per algorithm and task:
{counts}

Filters applied: only translations kept by the faithfulness filter; evaluation items held out ({num_held_out} records
of {num_eval_ids} eval ids, in the `test` split, never trained on); rows over {max_chars} characters
dropped ({num_too_long} rows, measured {measure}).

{lengths}"""


def load_eval_ids(eval_ids: Iterable[str] | Path | str | None) -> set[str]:
    """Eval item ids from a set/list, or a file holding a JSON list or one id a line; empty set for None."""
    if eval_ids is None:
        return set()
    if isinstance(eval_ids, str | Path):
        text = Path(eval_ids).read_text(encoding="utf-8")
        if text.lstrip().startswith("["):
            return {str(i) for i in json.loads(text)}
        return {line.strip() for line in text.splitlines() if line.strip()}
    return {str(i) for i in eval_ids}


def _benchmark_prompts(benchmark_dir: Path | str | None) -> dict[tuple[str, str, str], str]:
    """(item id, algorithm, task) -> prompt from rtce.json; empty without a benchmark."""
    if benchmark_dir is None:
        return {}
    from tracegen.benchmark import read_corpus

    prompts = {}
    for item in read_corpus(benchmark_dir):
        for name, entry in item["algorithms"].items():
            for task, record in entry["tasks"].items():
                prompts[item["id"], name, task] = record["prompt"]
    return prompts


def user_prompt(record: Mapping[str, Any], prompts: Mapping[tuple[str, str, str], str] | None = None) -> str:
    """The task prompt for a translation record: O/P Pred for `encode`, I/P Pred for `decode` (see module doc)."""
    task = TASK_OF_DIRECTION[record["direction"]]
    key = (record["item_id"], record["algorithm"], task.value)
    if prompts and key in prompts:
        return prompts[key]
    from tracegen.algorithms import get_algorithm
    from tracegen.tasks import make_task

    x = record["input"] if record["direction"] == "encode" else record["label"]
    return make_task(get_algorithm(record["algorithm"]), task, x).prompt


def to_chat(
    record: Mapping[str, Any], prompts: Mapping[tuple[str, str, str], str] | None = None, answer_only: bool = False
) -> dict[str, Any]:
    """The dataset row (without `num_chars`) of one kept translation record; `answer_only`: the assistant turn is
    the answer block alone (no narrated trace), the row id ends in `/answer`."""
    reply = answer_block(record["label"]) if answer_only else record["translation"]
    messages = [
        {"role": "user", "content": user_prompt(record, prompts)},
        {"role": "assistant", "content": reply},
    ]
    return {
        "id": f"{record['id']}/{ANSWER_ONLY}" if answer_only else record["id"],
        "item_id": record["item_id"],
        "algorithm": record["algorithm"],
        "direction": record["direction"],
        "task": TASK_OF_DIRECTION[record["direction"]].value,
        "messages": messages,
        "answer_json": dumps(record["label"]),
        "backend": record.get("backend", ""),
    }


def chat_length(messages: Sequence[Mapping[str, str]], tokenizer: Any = None) -> int:
    """Characters of the chat template rendering (with a tokenizer), else of the turns' raw text."""
    if tokenizer is not None:
        return len(tokenizer.apply_chat_template(list(messages), tokenize=False))
    return sum(len(m["content"]) for m in messages)


def write_dataset(
    directory: Path,
    rows: Sequence[Mapping[str, Any]],
    name: str,
    card_info: Mapping[str, Any],
    lengths: list[int],
    test_rows: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """`directory` as a dataset (`kt_train.hf_dataset`) whose card counts rows per algorithm and task, names the
    filters and, with a length tokenizer, the rows' token lengths (`lengths`, one per row); returns those lengths'
    statistics (empty without). `test_rows` (the held-out inputs' rows, never trained on) are its `test` split."""
    counts = Counter((r["algorithm"], r["task"]) for r in rows)
    lines = "\n".join(f"- {alg} / {task}: {n}" for (alg, task), n in sorted(counts.items())) or "- (none)"
    tokenizer = card_info["length_tokenizer"]
    stats = length_stats(lengths, tokenizer) if tokenizer else {}
    description = CARD_DESCRIPTION.format(
        num_rows=len(rows), counts=lines, lengths=length_card_section(stats), **card_info
    )
    info = CardInfo(
        pretty_name=f"RTCE SFT corpus: {name}",
        description=description,
        command=card_info["command"],
        language=("en", "code"),
        tags=("rtce", "code-execution", "sft"),
    )
    splits = {"train": pa.Table.from_pylist(list(rows), schema=SCHEMA)}
    if test_rows:
        splits["test"] = pa.Table.from_pylist(list(test_rows), schema=SCHEMA)
    write_hf_dataset(directory, splits, info)
    return stats


def _count(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    cells: dict[str, Counter[str]] = {}
    for row in rows:
        cells.setdefault(row["algorithm"], Counter())[row["task"]] += 1
    return {alg: dict(sorted(c.items())) for alg, c in sorted(cells.items())}


def build_sft_data(
    translations_dir: Path | str,
    output_dir: Path | str,
    benchmark_dir: Path | str | None = None,
    eval_ids: Iterable[str] | Path | str | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    tokenizer: Any = None,
    length_tokenizer: ChatTokenizer | str | None = DEFAULT_MODEL,
    command: str | None = None,
    completions: str = "trace",
) -> dict[str, Any]:
    """Write the per-algorithm and combined SFT datasets under `output_dir`; return the summary (see module doc).
    `length_tokenizer` (a name loads it; None: no token counts) measures the rows for the cards and the summary.
    `completions` (`COMPLETIONS`): each record's narrated trace, its answer alone, or a row of each."""
    if completions not in COMPLETIONS:
        raise ValueError(f"completions must be one of {', '.join(COMPLETIONS)}, got {completions!r}")
    path = Path(translations_dir) / TRANSLATIONS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no {TRANSLATIONS_FILE} in {translations_dir} (make it with `kt traces translate`)")
    if max_chars < 1:
        raise ValueError("max_chars must be >= 1")
    held = load_eval_ids(eval_ids)
    prompts = _benchmark_prompts(benchmark_dir)
    records = sorted(read_jsonl(path), key=lambda r: r["id"])
    dropped: Counter[str] = Counter()
    rows: list[dict[str, Any]] = []
    test_rows: list[dict[str, Any]] = []
    styles = {"trace": [False], "answer": [True], "both": [False, True]}[completions]
    for record in records:
        if not record.get("kept") or not record.get("translation"):
            dropped["not_kept"] += 1
            continue
        if record["item_id"] in held:
            dropped["held_out"] += 1
        for answer_only in styles:
            row = to_chat(record, prompts, answer_only)
            row["num_chars"] = chat_length(row["messages"], tokenizer)
            if record["item_id"] in held:
                test_rows.append(row)
            elif row["num_chars"] > max_chars:
                dropped["too_long"] += 1
            else:
                rows.append(row)
    length_tokenizer = ChatTokenizer.of(length_tokenizer)
    lengths = length_tokenizer.count([row["messages"] for row in rows]) if length_tokenizer else [0] * len(rows)
    card_info = {
        "command": command,
        "length_tokenizer": length_tokenizer.name if length_tokenizer else None,
        "num_held_out": dropped["held_out"],
        "num_eval_ids": len(held),
        "max_chars": max_chars,
        "num_too_long": dropped["too_long"],
        "measure": "on the tokenizer's chat template" if tokenizer is not None else "on the raw text of both turns",
    }
    output = Path(output_dir)
    algorithms = sorted({r["algorithm"] for r in rows})
    for name in algorithms:
        mine = [i for i, row in enumerate(rows) if row["algorithm"] == name]
        tests = [row for row in test_rows if row["algorithm"] == name]
        write_dataset(output / name, [rows[i] for i in mine], name, card_info, [lengths[i] for i in mine], tests)
    token_lengths = write_dataset(output / COMBINED, rows, "all algorithms", card_info, lengths, test_rows)
    summary = {
        "rows": len(rows),
        "test_rows": len(test_rows),
        "completions": completions,
        "dropped": {key: dropped[key] for key in ("not_kept", "held_out", "too_long")},
        "eval_ids": len(held),
        "max_chars": max_chars,
        "counts": _count(rows),
        "datasets": [*algorithms, COMBINED],
        "token_lengths": token_lengths,
    }
    (output / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


__all__ = [
    "COMPLETIONS",
    "TASK_OF_DIRECTION",
    "build_sft_data",
    "chat_length",
    "load_eval_ids",
    "to_chat",
    "user_prompt",
]
