"""SeqCoder training pairs (KT paper §4): a sequence in, the DSL program that prints it out, as chat rows.

The same prompt is used for training (`to_seqcoder_chat`, GRPO: `to_seqcoder_rl_row`) and evaluation, so scores are
comparable.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsl.feedback import with_feedback
from kt_train.models import DEFAULT_MODEL

PROMPT = (
    "Write the shortest program in the KT sequence DSL whose `output` is exactly this sequence of integers. "
    "Answer with the program only, one assignment per line.\n\nSequence: {sequence}"
)

_NAME = r"[A-Za-z_]\w*"
_COMMENT = r"(?:[ \t]*#[^\n]*)?"  # `kt dsl render --values` writes `# [values]` after a line
_LINE_END = rf"{_COMMENT}[ \t]*\n(?:[ \t]*\n)*"
# A completion that is only a DSL program: `name = function(literals and names)` lines, then `output = name` last
# (the shape `dsl.parser` accepts; the parser still checks functions, arity and argument kinds).
DSL_FORMAT_PATTERN = (
    rf"(?:[ \t]*{_NAME}[ \t]*=[ \t]*{_NAME}[ \t]*\([^()\n#]*\){_LINE_END})+"
    rf"[ \t]*output[ \t]*=[ \t]*{_NAME}{_COMMENT}"
)


def seqcoder_prompt(sequence: Sequence[int]) -> str:
    """The user turn for a sequence."""
    return PROMPT.format(sequence=" ".join(str(int(v)) for v in sequence))


def to_seqcoder_chat(row: dict[str, Any], feedback_max_values: int | None = None) -> dict[str, Any]:
    """A corpus row (`sequence`, `program`) as a conversational prompt/completion pair. With `feedback_max_values`
    the program carries execution feedback (`dsl.feedback.with_feedback`: `# [values]` after each line)."""
    program = row["program"] if feedback_max_values is None else with_feedback(row["program"], feedback_max_values)
    return {
        "prompt": [{"role": "user", "content": seqcoder_prompt(row["sequence"])}],
        "completion": [{"role": "assistant", "content": program}],
    }


CHAT_DESCRIPTION = """SeqCoder training chats (KT paper, Section 4) made by `kt dsl export-chat` (kt-train) from a
corpus of `kt dsl generate`: one conversational prompt/completion pair per program-sequence pair, the form stock
`trl sft` trains on (loss on the completion only). Columns: `id` (the corpus row's id), `prompt` (one user turn: the
sequence and the task), `completion` (one assistant turn: the shortest DSL program that prints the sequence)."""


def export_chat(
    corpus: Path, output: Path, command: str | None = None, length_tokenizer: str | None = DEFAULT_MODEL
) -> dict[str, Any]:
    """Write the SeqCoder chats of a `kt dsl generate` corpus as a dataset (`kt_train.hf_dataset`; the card gives
    the chats' token lengths in `length_tokenizer`'s tokens unless it is None); its summary."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kt_train.hf_dataset import CardInfo, write_hf_dataset
    from kt_train.token_lengths import ChatTokenizer, length_card_section, length_stats

    shards = sorted((corpus / "data").glob("*.parquet"))
    if not shards:
        raise FileNotFoundError(f"no Parquet shards in {corpus}/data (make the corpus with `kt dsl generate`)")
    table = pq.ParquetDataset(shards).read(columns=["id", "sequence", "program"])
    rows = [{"id": row["id"], **to_seqcoder_chat(row)} for row in table.to_pylist()]
    lengths: dict[str, Any] = {}
    if length_tokenizer is not None:
        tokenizer = ChatTokenizer.load(length_tokenizer)
        lengths = length_stats(tokenizer.count([row["prompt"] + row["completion"] for row in rows]), tokenizer.name)
    info = CardInfo(
        pretty_name=f"SeqCoder chats of {corpus.name}",
        description=f"{CHAT_DESCRIPTION}\n\n{length_card_section(lengths)}",
        command=command,
        tags=("kolmogorov-test", "program-synthesis", "seqcoder"),
        language=("en", "code"),
    )
    write_hf_dataset(output, {"train": pa.Table.from_pylist(rows)}, info)
    return {"rows": len(rows), "output": str(output), "token_lengths": lengths}


def to_seqcoder_rl_row(row: dict[str, Any]) -> dict[str, Any]:
    """A corpus or evaluation-set row (`sequence`) as a GRPO row: the prompt, the sequence `kt_compression_reward`
    checks and the `format_pattern` of `format_reward`."""
    sequence = [int(v) for v in row["sequence"]]
    return {
        "prompt": [{"role": "user", "content": seqcoder_prompt(sequence)}],
        "sequence": sequence,
        "format_pattern": DSL_FORMAT_PATTERN,
    }


def build_kt_corpus(output: Path, num_pairs: int, seed: int, workers: int = 1, progress: bool = True) -> Path:
    """The deduplicated program-sequence corpus of `num_pairs` pairs (cached: a finished corpus is reused)."""
    from dsl.corpus import CorpusRequest, generate_corpus
    from dsl.dataset_io import read_manifest
    from dsl.selection import Target

    if read_manifest(output) is None:
        command = f"kt dsl generate --num-pairs {num_pairs} --seed {seed} --output OUT"
        target = Target(pairs=num_pairs)
        generate_corpus(CorpusRequest(output, seed, target, workers=workers, command=command, progress=progress))
    return output


def kt_corpus_dir(dataset_name: str | None, num_pairs: int, seed: int) -> Path:
    """`dataset_name`, else the default corpus of `num_pairs` pairs under the kt-train cache
    (`$KT_TRAIN_CACHE/data`): built once, by the main process of a distributed run first, found by the others."""
    if dataset_name is not None:
        return Path(dataset_name)
    from accelerate import PartialState

    from kt_train.models import cache_dir

    state = PartialState()
    root = cache_dir() / "data" / f"kt-dsl-seed{seed}-{num_pairs}"
    with state.main_process_first():
        workers = len(os.sched_getaffinity(0))
        return build_kt_corpus(root, num_pairs, seed, workers=workers, progress=state.is_main_process)


__all__ = [
    "DSL_FORMAT_PATTERN",
    "PROMPT",
    "build_kt_corpus",
    "kt_corpus_dir",
    "seqcoder_prompt",
    "to_seqcoder_chat",
    "to_seqcoder_rl_row",
]
