"""Expert iteration for the SeqCoder (STaR / ReST-EM): an SFT corpus of the correct programs a search found on fresh
sequences, with replay rows of the original corpus so the model keeps what it knew.

    # 1. search fresh sequences (never the held-out ones) with the SFT model
    kt eval kt --dataset FRESH --mode dsl --model SFT_RUN --line-search 8 --line-backtracks 4 --temperature 1.0 \\
        --batch-size 64 --max-new-tokens 1024 --output SEARCH
    # 2. its correct programs, and twice as many replay rows (segment programs of the SFT corpus's sequences)
    python recipes/tools/kt_search_corpus.py --search SEARCH --replay $KT_TRAIN_CACHE/data/kt-dsl-seed42-100000 \\
        --replay_ratio 2 --output CORPUS
    # 3. fine-tune the SFT model on it (the corpus's programs as they are: program_target generator)
    accelerate launch --config_file accelerate_configs/cpu.yaml recipes/sft_kt.py \\
        --config recipes/seqcoder-tiny/sft_kt/config_expert_iteration.yaml --dataset_name CORPUS

Measured in docs/dsl.md, "Expert iteration from the segments model".
"""

from __future__ import annotations

import json
import logging
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from transformers import HfArgumentParser

from dsl.segments import segment_program
from kt_train.hf_dataset import CardInfo, write_hf_dataset
from kt_train.logs import configure_logging, report_error, take_debug_flag
from kt_train.training.data import load_training_dataset

logger = logging.getLogger(__name__)


@dataclass
class SearchCorpusArguments:
    search: Path = field(metadata={"help": "a `kt eval kt` output folder (its items.jsonl: verdicts and programs)"})
    output: Path = field(metadata={"help": "the corpus folder to write (columns sequence, program, source)"})
    replay: Path | None = field(
        default=None, metadata={"help": "a `kt dsl generate` corpus whose sequences are replayed as segment programs"}
    )
    replay_ratio: float = field(default=2.0, metadata={"help": "replay rows per found program"})
    seed: int = field(default=0, metadata={"help": "which replay rows, and the order of all rows"})


def found_programs(search: Path) -> list[dict[str, object]]:
    """The correct programs of a scored `kt eval kt` run, one per sequence."""
    items = search / "items.jsonl"
    if not items.is_file():
        raise FileNotFoundError(f"{search}: no items.jsonl (not a finished `kt eval kt` run)")
    rows = [json.loads(line) for line in items.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [
        {"sequence": row["sequence"], "program": row["program"], "source": "search"} for row in rows if row["correct"]
    ]


def replay_rows(corpus: Path, count: int, rng: random.Random) -> list[dict[str, object]]:
    """`count` sequences of `corpus` drawn with `rng`, each with its segment program."""
    sequences = load_training_dataset(str(corpus))["sequence"]
    if count > len(sequences):
        raise ValueError(f"{corpus}: {count} replay rows asked for, the corpus has {len(sequences)}")
    drawn = rng.sample(range(len(sequences)), count)
    return [{"sequence": sequences[i], "program": segment_program(sequences[i]), "source": "replay"} for i in drawn]


def build_search_corpus(args: SearchCorpusArguments) -> tuple[int, int]:
    """Write the corpus; return (found programs, replay rows)."""
    found = found_programs(args.search)
    if not found:
        raise ValueError(f"{args.search}: the search found no correct program")
    rng = random.Random(args.seed)
    replay = replay_rows(args.replay, round(len(found) * args.replay_ratio), rng) if args.replay else []
    rows = found + replay
    rng.shuffle(rows)
    info = CardInfo(
        pretty_name="SeqCoder expert-iteration corpus",
        description=f"The {len(found)} correct programs a `kt eval kt` search found ({args.search}), and "
        f"{len(replay)} replay rows (segment programs of sequences of {args.replay}); columns sequence, program, "
        "source (search or replay).",
        command=f"python recipes/tools/kt_search_corpus.py --search {args.search} --output {args.output}"
        + (f" --replay {args.replay} --replay_ratio {args.replay_ratio}" if args.replay else "")
        + f" --seed {args.seed}",
        tags=("kt", "seqcoder", "expert-iteration"),
    )
    write_hf_dataset(args.output, {"train": pa.Table.from_pylist(rows)}, info)
    return len(found), len(replay)


def main(argv: list[str] | None = None) -> int:
    argv, debug = take_debug_flag(sys.argv[1:] if argv is None else argv)
    configure_logging(debug)
    (args,) = HfArgumentParser(SearchCorpusArguments).parse_args_into_dataclasses(argv)
    try:
        found, replay = build_search_corpus(args)
    except Exception as error:  # one line (the traceback with --debug), as every kt command
        return report_error("kt_search_corpus", error, debug)
    logger.info("wrote %d found programs and %d replay rows to %s", found, replay, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
