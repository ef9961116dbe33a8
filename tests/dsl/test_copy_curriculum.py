"""The copy curriculum (dsl.copy_curriculum): phases of `set_list` programs that print their own sequence."""

from __future__ import annotations

import pytest

from dsl.copy_curriculum import MIN_LIST_LENGTH, CopyPhase, copy_rows
from dsl.interpreter import run_program


def test_rows_come_phase_after_phase_and_every_program_prints_its_sequence() -> None:
    phases = [CopyPhase.parse("10:8:50"), CopyPhase.parse("256:30:70")]
    rows = copy_rows(phases, seed=1)
    assert len(rows) == 120
    for row in rows:
        assert run_program(row["program"]) == row["sequence"]
        assert row["program"].startswith("sequence_1 = set_list([") and row["program"].endswith("output = sequence_1")
    first, second = rows[:50], rows[50:]
    assert all(max(r["sequence"]) < 10 and MIN_LIST_LENGTH <= len(r["sequence"]) <= 8 for r in first)
    assert all(MIN_LIST_LENGTH <= len(r["sequence"]) <= 30 for r in second)
    assert max(max(r["sequence"]) for r in second) > 200 and max(len(r["sequence"]) for r in second) > 20


def test_the_same_seed_gives_the_same_rows_another_seed_others() -> None:
    phases = [CopyPhase(values=256, max_length=30, rows=20)]
    assert copy_rows(phases, seed=3) == copy_rows(phases, seed=3)
    assert copy_rows(phases, seed=3) != copy_rows(phases, seed=4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10:8", "VALUES:MAX_LENGTH:ROWS"),
        ("ten:8:5", "VALUES:MAX_LENGTH:ROWS"),
        ("257:8:5", "values must be 2..256"),
        ("10:4:5", "max_length must be >= 5"),
        ("10:8:0", "rows must be >= 1"),
    ],
)
def test_a_bad_phase_is_refused_in_one_line(text: str, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        CopyPhase.parse(text)
