"""Execution feedback in the DSL: `# [values]` comments (training programs) and the line-by-line interpreter that
feed & ex decoding asks after every generated line."""

from __future__ import annotations

import random
import re

import pytest

from dsl.feedback import LineFeedback, with_feedback
from dsl.interpreter import run_lines
from dsl.parser import parse_program
from dsl.program import DSLError, render_program, values_comment
from dsl.sampler import sample_program

PROGRAM = "sequence_1 = range_func_up(1, 20)\nsequence_2 = add_item_list(sequence_1, 3)\noutput = sequence_2"


def test_values_comment_shows_at_most_max_values() -> None:
    assert values_comment([1, 2, 3]) == "# [1, 2, 3]"
    assert values_comment([1, 2, 3], max_values=3) == "# [1, 2, 3]"
    assert values_comment([1, 2, 3], max_values=2) == "# [1, 2, ...]"
    assert values_comment([], max_values=2) == "# []"


def test_feedback_programs_parse_back_to_the_same_program() -> None:
    for seed in range(200):
        program, _ = sample_program(random.Random(seed))
        text = render_program(program)
        fed = with_feedback(text, max_values=8)
        assert parse_program(fed) == program
        values = run_lines(program)
        assert [line.split(" # ", 1)[1] for line in fed.splitlines()] == [values_comment(v, 8)[2:] for v in values]


def test_line_feedback_runs_each_line_and_ends_at_the_first_failure() -> None:
    feedback = LineFeedback(max_values=4)
    first = feedback.add("sequence_1 = range_func_up(1, 20) # the model's own comment is dropped")
    assert (first.code, first.comment, first.error, first.is_output) == (
        "sequence_1 = range_func_up(1, 20)",
        "# [1, 2, 3, 4, ...]",
        None,
        False,
    )
    assert feedback.add("sequence_2 = add_item_list(sequence_1, 3)").comment == "# [4, 5, 6, 7, ...]"
    done = feedback.add("output = sequence_2")
    assert done.is_output and done.error is None and done.comment == "# [4, 5, 6, 7, ...]"
    assert feedback.lines == PROGRAM.splitlines()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("sequence_2 = range_func_interval(1, 9, 0)", "interval must not be zero"),
        ("sequence_2 = reverse_list(sequence_7)", "not defined"),
        ("sequence_2 = no_such_function(sequence_1)", "unknown function"),
        ("sequence_2 = repeat_list(10000000, sequence_1)", "limit"),
        ("output = sequence_7", "not defined"),
        ("sequence_2 = __import__('os')", "expected|unexpected"),
    ],
)
def test_a_line_that_does_not_run_is_an_error_naming_it(line: str, message: str) -> None:
    feedback = LineFeedback()
    assert feedback.add("sequence_1 = range_func_up(1, 5)").error is None
    result = feedback.add(line)
    assert result.comment is None and result.error is not None
    assert result.error.startswith("line 2:") and re.search(message, result.error)


def test_a_partial_program_runs_to_its_last_line_but_is_no_complete_program() -> None:
    partial = "sequence_1 = range_func_up(1, 3)\nsequence_2 = reverse_list(sequence_1)"
    assert run_lines(parse_program(partial, partial=True))[-1] == [3, 2, 1]
    with pytest.raises(DSLError, match="no 'output"):
        parse_program(partial)
    with pytest.raises(DSLError, match="no 'output"):
        parse_program("", partial=True)
