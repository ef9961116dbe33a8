"""Literal tail (`kt eval kt --literal-tail`): finish a left-to-right program that went wrong with the numbers it
did not write.

A segment program (`dsl.segments`) writes the sequence left to right, each piece concatenated onto the output so far.
When the model's program goes wrong (a literal copied wrong, a run one too long), its lines up to that point still
write a prefix of the sequence, and the encoder knows the rest: it sends those lines, one `set_list` of the numbers
after the prefix, their concatenation and the output line. That program is correct by construction and priced by the
same uniform prior as any other: every tail number costs log2(number_range) bits, as in the raw sequence, plus three
lines of overhead, so the whole is shorter than the raw sequence only when the model's lines wrote a prefix for fewer
bits than its numbers cost. It is kept only then; the evaluation adds it as one more sample of the item, and the item
keeps its shortest correct sample as always. The model's own programs are reported beside it (`literal_tail_summary`).

This generalises the paper's flag bit (program or raw sequence, all or nothing) to a split point inside the sequence;
the decoder needs nothing new, and nothing here can make a program cheaper than the bits its lines cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsl.bits import program_bits
from dsl.interpreter import run_lines
from dsl.parser import parse_program
from dsl.program import Line, render_line
from eval.kt.line_search import LeftToRightProgram
from eval.kt.scoring import DEFAULT_GZIP_ENCODING, GzipEncoding, ProgramPrior, aggregate, rows_with_samples

LITERAL_TAIL = "literal_tail"
"""The `derived` field of a sample made by this module (a model's samples have none)."""


def _needed(lines: Sequence[Line], last: int) -> list[Line]:
    """Lines 0..`last` that line `last` reads, directly or not (in order), itself included."""
    targets = {line.target: index for index, line in enumerate(lines[: last + 1])}
    keep, todo = {last}, [last]
    while todo:
        for arg in lines[todo.pop()].args:
            index = targets.get(arg) if isinstance(arg, str) else None
            if index is not None and index not in keep:
                keep.add(index)
                todo.append(index)
    return [line for index, line in enumerate(lines) if index in keep]


def _fresh_name(lines: Sequence[Line]) -> str:
    taken = {line.target for line in lines}
    number = len(lines) + 1
    while f"sequence_{number}" in taken:
        number += 1
    return f"sequence_{number}"


@dataclass(frozen=True)
class TailedProgram:
    """A program finished with a literal tail: its text and how many numbers the tail holds."""

    text: str
    tail_length: int


def literal_tail_program(program: str | None, sequence: Sequence[int], raw_bits: float) -> TailedProgram | None:
    """The model's `program` cut after the last of its lines that writes a prefix of `sequence` (read left to right,
    as `line_search` checks lines), less lines that prefix does not read, with the rest of the sequence as one
    literal; None when the program is already complete, writes no prefix, or the result is not shorter than the raw
    sequence (`raw_bits`) under the uniform prior."""
    if not program or not sequence:
        return None
    written = LeftToRightProgram("", tuple(sequence))
    if written.accept_greedy(program) or written.prefix == 0:
        return None  # the program reaches its output line on the sequence (the checker scores it), or writes nothing
    parsed = parse_program("\n".join(written.lines), partial=True)  # every kept line parsed and ran when accepted
    values = run_lines(parsed)[: len(parsed.lines)]  # (the last entry is the partial program's output again)
    prefix = list(sequence[: written.prefix])
    last = max(index for index, line_values in enumerate(values) if line_values == prefix)
    lines = _needed(parsed.lines, last)
    head = lines[-1].target
    texts = [render_line(line) for line in lines]
    if written.prefix < len(sequence):
        tail = Line(_fresh_name(lines), "set_list", (tuple(sequence[written.prefix :]),))
        whole = Line(_fresh_name([*lines, tail]), "concatenate", (head, tail.target))
        texts += [render_line(tail), render_line(whole)]
        head = whole.target
    text = "\n".join([*texts, f"output = {head}"])
    return TailedProgram(text, len(sequence) - written.prefix) if program_bits(text) < raw_bits else None


def literal_tail_summary(
    rows: Sequence[Mapping[str, Any]],
    symbol_bits: int,
    encoding: GzipEncoding = DEFAULT_GZIP_ENCODING,
    prior: ProgramPrior = "uniform",
) -> dict[str, Any]:
    """What the literal tails bought: the model's own programs' metrics alone (each item keeping its best sample of
    the model's), the items whose kept program has a literal tail, and the share of those items' numbers the model's
    lines wrote."""
    model = aggregate(
        rows_with_samples(rows, lambda s: [x for x in s if not x.get("derived")]), symbol_bits, encoding, prior
    )
    tailed = [r for r in rows if r.get("derived") == LITERAL_TAIL]
    written = sum(r["length"] - r["tail_length"] for r in tailed)
    return {
        "model": {key: model[key] for key in ("accuracy", "compression_rate", "precision", "executable")},
        "items_with_tail": len(tailed),
        "numbers_written_by_model": written / sum(r["length"] for r in tailed) if tailed else None,
    }


__all__ = ["LITERAL_TAIL", "TailedProgram", "literal_tail_program", "literal_tail_summary"]
