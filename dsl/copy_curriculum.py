"""A copy curriculum for a SeqCoder trained from scratch: program-sequence pairs whose program is `set_list` of the
sequence, in phases of growing values and lengths (digits in short lists first, then 0..255 in lists as long as
the corpus's), trained before the corpus.

Why (issue 20, `bench/bench_copy_probe.py`): most literals of the corpus's programs are numbers of the sequence
(85% over 2,000 programs), so a SeqCoder must copy numbers from its prompt. A 1.1M-parameter model trained on the
corpus, or on copies of 0..255 alone, stayed at chance on those numbers; after 300 steps of digits in lists of 5-8
it copies them, and the skill carries over to 0..255 and to lists of 30 within another 1,200 steps.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

MIN_LIST_LENGTH = 5
BYTE_VALUES = 256  # the corpus's sequences are bytes


@dataclass(frozen=True)
class CopyPhase:
    """`rows` copies of lists of `MIN_LIST_LENGTH`..`max_length` numbers drawn from 0..`values`-1."""

    values: int = field(metadata={"help": "numbers are drawn from 0..values-1"})
    max_length: int = field(metadata={"help": "longest list"})
    rows: int = field(metadata={"help": "rows of this phase"})

    def __post_init__(self) -> None:
        if not 2 <= self.values <= BYTE_VALUES:
            raise ValueError(f"copy phase values must be 2..{BYTE_VALUES}, got {self.values}")
        if self.max_length < MIN_LIST_LENGTH:
            raise ValueError(f"copy phase max_length must be >= {MIN_LIST_LENGTH}, got {self.max_length}")
        if self.rows < 1:
            raise ValueError(f"copy phase rows must be >= 1, got {self.rows}")

    @classmethod
    def parse(cls, text: str) -> CopyPhase:
        """A phase written `VALUES:MAX_LENGTH:ROWS` (e.g. `10:8:4800`)."""
        parts = text.split(":")
        if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
            raise ValueError(f"a copy phase is VALUES:MAX_LENGTH:ROWS (e.g. 10:8:4800), got {text!r}")
        return cls(*(int(p) for p in parts))


def copy_program(values: list[int]) -> str:
    """The DSL program that prints `values`, in the corpus's form."""
    return f"sequence_1 = set_list([{', '.join(map(str, values))}])\noutput = sequence_1"


def copy_rows(phases: list[CopyPhase], seed: int) -> list[dict[str, Any]]:
    """The curriculum's rows (`sequence`, `program`), phase after phase; the same rows for the same seed."""
    rng = random.Random(seed)
    rows = []
    for phase in phases:
        for _ in range(phase.rows):
            values = [rng.randrange(phase.values) for _ in range(rng.randint(MIN_LIST_LENGTH, phase.max_length))]
            rows.append({"sequence": values, "program": copy_program(values)})
    return rows


__all__ = ["BYTE_VALUES", "MIN_LIST_LENGTH", "CopyPhase", "copy_program", "copy_rows"]
