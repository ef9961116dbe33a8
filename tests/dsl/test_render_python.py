"""render_python: standalone Python (no imports) that computes the same output as the interpreter."""

import random

import pytest

from dsl import DSLError, parse_program, render_python, run_program, sample_program


def exec_output(source: str) -> list[int]:
    namespace: dict = {}
    exec(source, namespace)  # our own generated code, trusted
    return namespace["output"]


@pytest.mark.parametrize("seed", range(200))
def test_sampled_programs(seed):
    program, sequence = sample_program(random.Random(seed))
    source = render_python(program)
    assert "import" not in source
    assert exec_output(source) == run_program(program) == sequence


# Every function, including edge cases where a Python rewrite could drift from the interpreter.
HAND_PROGRAMS = [
    """sequence_1 = range_func_up(3, 7)
sequence_2 = repeat_num(5, 200)
sequence_3 = interleave(sequence_1, sequence_2)
output = sequence_3""",
    """sequence_1 = set_list([3, 1, 3, 2, 0])
sequence_2 = max_n(sequence_1, 3)
sequence_3 = min_n(sequence_1, 3)
sequence_4 = max_n(sequence_1, -2)
sequence_5 = min_n(sequence_1, -2)
sequence_6 = max_n(sequence_1, 99)
sequence_7 = concatenate(sequence_2, sequence_3)
sequence_8 = concatenate(sequence_7, sequence_4)
sequence_9 = concatenate(sequence_8, sequence_5)
sequence_10 = concatenate(sequence_9, sequence_6)
output = sequence_10""",
    """sequence_1 = range_func_interval(0, 20, 3)
sequence_2 = range_func_interval(20, 0, -6)
sequence_3 = modulo_two_lists(sequence_1, sequence_2)
sequence_4 = interleave(sequence_3, sequence_1)
sequence_5 = interleave(sequence_2, sequence_4)
output = sequence_5""",
    """sequence_1 = set_list([5, 6, 7, 0])
sequence_2 = set_list([2, 0, 4])
sequence_3 = modulo_two_lists(sequence_1, sequence_2)
sequence_4 = add_two_lists(sequence_1, sequence_2)
sequence_5 = subtract_two_lists(sequence_2, sequence_1)
sequence_6 = filter(is_not_zero, sequence_1)
sequence_7 = filter(is_odd, sequence_4)
sequence_8 = filter(is_even, sequence_5)
sequence_9 = concatenate(sequence_3, sequence_6)
sequence_10 = concatenate(sequence_9, sequence_7)
sequence_11 = concatenate(sequence_10, sequence_8)
output = sequence_11""",
    """sequence_1 = range_func_up(0, 9)
sequence_2 = repeat_list(2, sequence_1)
sequence_3 = get_subsequence_with_jumps(sequence_2, 3)
sequence_4 = get_subsequence_with_jumps(sequence_2, -4)
sequence_5 = get_subsequence_between_indices(sequence_2, 3, 8)
sequence_6 = substitute(sequence_5, 4, 77)
sequence_7 = reverse_list(sequence_6)
sequence_8 = scan_add(sequence_7)
sequence_9 = add_item_list(sequence_8, 5)
sequence_10 = subtract_item_list(sequence_9, 100)
sequence_11 = modulo_item_list(sequence_10, 7)
sequence_12 = interleave(sequence_3, sequence_4)
sequence_13 = concatenate(sequence_12, sequence_11)
output = sequence_13""",
    """sequence_1 = set_list([])
sequence_2 = range_func_up(4, 2)
sequence_3 = interleave(sequence_1, sequence_2)
sequence_4 = scan_add(sequence_3)
output = sequence_4""",
]


@pytest.mark.parametrize("text", HAND_PROGRAMS)
def test_hand_programs(text):
    program = parse_program(text)
    source = render_python(program)
    assert "import" not in source
    assert exec_output(source) == run_program(program)


def test_defines_only_the_functions_used():
    source = render_python(parse_program("sequence_1 = range_func_up(1, 3)\noutput = sequence_1"))
    assert "def range_func_up(" in source
    assert "def interleave(" not in source
    assert source.endswith("sequence_1 = range_func_up(1, 3)\noutput = sequence_1\n")
    source = render_python(parse_program(HAND_PROGRAMS[3]))
    for name in ("filter", "is_not_zero", "is_odd", "is_even", "modulo_two_lists", "set_list"):
        assert f"def {name}(" in source
    assert "def is_even(" not in render_python(parse_program(HAND_PROGRAMS[0]))


def assert_rejected_or_equivalent(text: str) -> None:
    """Either the parser rejects the target name, or the rendered Python computes the interpreter's output."""
    try:
        program = parse_program(text)
    except DSLError:
        return
    assert exec_output(render_python(program)) == run_program(program)


def test_target_named_like_a_builtin():
    assert_rejected_or_equivalent("list = range_func_up(1, 3)\nsequence_2 = range_func_up(1, 2)\noutput = sequence_2")


def test_target_named_like_a_keyword():
    assert_rejected_or_equivalent("def = range_func_up(1, 3)\noutput = def")


@pytest.mark.parametrize("name", ["x", "seq", "out", "total", "values", "a", "b", "n", "pattern", "predicate"])
def test_ordinary_target_names(name):
    # names that are locals or parameters inside the emitted definitions must not interfere
    text = (
        f"{name} = set_list([3, 0, 5])\nsequence_2 = filter(is_not_zero, {name})\n"
        f"sequence_3 = interleave(sequence_2, {name})\noutput = sequence_3"
    )
    program = parse_program(text)
    assert exec_output(render_python(program)) == run_program(program) == [3, 3, 5, 0, 5]
