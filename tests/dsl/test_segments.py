"""Segment programs (`dsl.segments`): any sequence, read left to right as runs and literals."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsl.bits import program_bits, unencodable_literal
from dsl.interpreter import run_program
from dsl.sampler import sample_program
from dsl.segments import MIN_RUN, MIN_RUN_UNIT, pieces, segment_program, with_segment_program


def test_the_docstring_example() -> None:
    sequence = [238, 186, 0, *range(115, 141, 5), *[91] * 6]
    assert segment_program(sequence) == (
        "sequence_1 = set_list([238, 186, 0])\n"
        "sequence_2 = range_func_interval(115, 141, 5)\n"
        "sequence_3 = concatenate(sequence_1, sequence_2)\n"
        "sequence_4 = repeat_num(6, 91)\n"
        "sequence_5 = concatenate(sequence_3, sequence_4)\n"
        "output = sequence_5"
    )


def test_descending_runs_are_reversed_ranges() -> None:
    program = segment_program([9, 7, 5, 3, 1, 40, 39, 38, 37])
    assert program.splitlines() == [
        "sequence_1 = range_func_interval(1, 10, 2)",
        "sequence_2 = reverse_list(sequence_1)",
        "sequence_3 = range_func_up(37, 40)",
        "sequence_4 = reverse_list(sequence_3)",
        "sequence_5 = concatenate(sequence_2, sequence_4)",
        "output = sequence_5",
    ]
    assert run_program(program) == [9, 7, 5, 3, 1, 40, 39, 38, 37]


def test_short_runs_stay_literal_and_long_repeats_are_split() -> None:
    assert [p.step for p in pieces([1, 3, 5, 7, 100, 2, 3, 4])] == [None]  # 4 at step 2, 3 at step 1: too short
    assert [p.step for p in pieces([1, 3, 5, 7, 9])] == [2]
    assert [p.step for p in pieces([4, 5, 6, 7])] == [1]
    assert MIN_RUN_UNIT < MIN_RUN
    assert [len(p.values) for p in pieces([5] * 45)] == [20, 20, 5]  # repeat_num's count is priced up to 20
    assert [p.step for p in pieces([0, 10, 20, 30, 40, 50])] == [None]  # a step over 8 no line writes


def test_one_number_and_no_number() -> None:
    assert segment_program([7]) == "sequence_1 = set_list([7])\noutput = sequence_1"
    with pytest.raises(ValueError, match="non-empty"):
        segment_program([])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 255), min_size=1, max_size=300))
def test_any_byte_sequence_is_printed_and_encodable(sequence: list[int]) -> None:
    program = segment_program(sequence)
    assert run_program(program) == sequence
    assert unencodable_literal(program) is None


def test_sampled_sequences_are_printed_and_cost_less_than_raw_on_the_whole() -> None:
    rng = random.Random(0)
    sequences = [sample_program(rng)[1] for _ in range(300)]
    rows = [with_segment_program({"sequence": s}) for s in sequences]
    assert all(run_program(row["program"]) == s for row, s in zip(rows, sequences))
    bits = sum(program_bits(row["program"]) for row in rows)
    raw = 8 * sum(len(s) for s in sequences)
    assert bits < 0.75 * raw  # 0.636 on the held-out 1 MB set's first 2,000
