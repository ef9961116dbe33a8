"""A KT program's lines as verified steps for GRPO's step credit (`kt_train.training.step_credit`).

A segment program (`dsl.segments`) is written left to right, and each line can be checked as `kt eval kt
--line-search` checks it (`eval.kt.line_search.LeftToRightProgram`): it passes when its value extends the prefix of
the sequence the program has written, is the next numbers about to be concatenated, or, for the output line, is the
whole sequence. Read that way, a completion is a list of steps: each line that passes is a step whose reward is the
bits it saved, the raw bits of the numbers it added to the prefix (`symbol_bits` each) less the line's own cost under
the uniform prior (`dsl.bits.program_bits`), over the sequence's raw bits; the output line of a correct program adds
`correct_bonus`. The first line that fails (it does not parse or run, writes the wrong numbers, holds a literal the
uniform prior cannot encode, or the completion stops before its output line) is the last step, reward 0, and the
tokens after it are not credited. A step's state is the text of the lines that passed before it.

The rewards add up as the literal-tail score does (`eval.kt.literal_tail`): a program cut at its first failing line
and finished with the rest of the sequence as a literal saves what its passing lines saved, less a constant.
The completion's lines are read as written: a SeqCoder writes its program bare, without fences or prose.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsl.bits import NUMBER_RANGE, program_bits, unencodable_literal
from dsl.feedback import line_code
from dsl.parser import parse_program
from dsl.program import DSLError
from eval.kt.line_search import LeftToRightProgram
from kt_train.rewards import Step


def _bits(lines: Sequence[str]) -> float:
    """Bits of the program so far under the uniform prior (its output line's function included); DSLError when a
    literal lies outside what that prior encodes."""
    if not lines:
        return 0.0
    parsed = parse_program("\n".join(lines), partial=True)
    if unencodable_literal(parsed, NUMBER_RANGE) is not None:
        raise DSLError("unencodable literal")
    return program_bits(parsed)


def line_steps(text: str, sequence: Sequence[int], symbol_bits: int, correct_bonus: float) -> list[Step]:
    """The steps of one completion for `sequence` (module docstring)."""
    if not sequence:
        return [Step(len(text) + 1, "", text, 0.0)]
    raw_bits = symbol_bits * len(sequence)
    written = LeftToRightProgram("", tuple(sequence))
    steps: list[Step] = []
    offset, bits, state = 0, 0.0, ""
    for line in text.splitlines(keepends=True):
        end = offset + len(line)
        prefix = written.prefix
        try:
            if not written.accept(line):
                return [*steps, Step(end, state, line, 0.0)]
            new_bits = _bits(written.lines)
        except (DSLError, ValueError):
            return [*steps, Step(end, state, line, 0.0)]
        reward = (symbol_bits * (written.prefix - prefix) - (new_bits - bits)) / raw_bits
        if written.done:  # the output line: the whole sequence, a correct program (end past the text: its EOS too)
            return [*steps, Step(len(text) + 1, state, line, reward + correct_bonus)]
        steps.append(Step(end, state, line, reward))
        offset, bits, state = end, new_bits, state + line_code(line) + "\n"
    return [*steps, Step(len(text) + 1, state, "", 0.0)]  # stopped before the output line


__all__ = ["line_steps"]
