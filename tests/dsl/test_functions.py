"""Official semantics of the 24 DSL names, pinned through run_program on small hand-written programs."""

import re

import pytest

from dsl import FUNCTION_NAMES, NUM_FUNCTIONS, parse_program, run_lines, run_program

OFFICIAL_NAMES = {
    "range_func_up",
    "range_func_interval",
    "repeat_num",
    "set_list",
    "repeat_list",
    "reverse_list",
    "substitute",
    "get_subsequence_with_jumps",
    "get_subsequence_between_indices",
    "max_n",
    "min_n",
    "add_item_list",
    "subtract_item_list",
    "modulo_item_list",
    "scan_add",
    "filter",
    "is_even",
    "is_odd",
    "is_not_zero",
    "add_two_lists",
    "subtract_two_lists",
    "modulo_two_lists",
    "concatenate",
    "interleave",
}


def test_function_names_are_the_24_official_ones():
    assert NUM_FUNCTIONS == 24
    assert len(FUNCTION_NAMES) == 24
    assert len(set(FUNCTION_NAMES)) == 24
    assert set(FUNCTION_NAMES) == OFFICIAL_NAMES


def one(call: str) -> list[int]:
    """Output of a one-line program `sequence_1 = <call>`."""
    return run_program(f"sequence_1 = {call}\noutput = sequence_1")


def unary(values: list[int], call: str) -> list[int]:
    """Output of `<call>` applied to sequence_1 = set_list(values); the call refers to it as `s`."""
    call = re.sub(r"\bs\b", "sequence_1", call)
    return run_program(f"sequence_1 = set_list({values})\nsequence_2 = {call}\noutput = sequence_2")


def binary(a: list[int], b: list[int], func: str) -> list[int]:
    text = (
        f"sequence_1 = set_list({a})\nsequence_2 = set_list({b})\n"
        f"sequence_3 = {func}(sequence_1, sequence_2)\noutput = sequence_3"
    )
    return run_program(text)


# ----- initiators


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("range_func_up(3, 7)", [3, 4, 5, 6, 7]),  # end inclusive
        ("range_func_up(5, 5)", [5]),
        ("range_func_up(5, 4)", []),
        ("range_func_up(-2, 1)", [-2, -1, 0, 1]),
        ("range_func_interval(2, 11, 3)", [2, 5, 8]),
        ("range_func_interval(0, 9, 3)", [0, 3, 6]),  # end exclusive
        ("range_func_interval(0, 10, 3)", [0, 3, 6, 9]),
        ("range_func_interval(10, 0, -4)", [10, 6, 2]),
        ("range_func_interval(5, 5, 1)", []),
        ("repeat_num(4, 200)", [200, 200, 200, 200]),  # (count, value)
        ("repeat_num(1, 7)", [7]),
        ("repeat_num(0, 7)", []),
        ("set_list([5, 0, 255, 5])", [5, 0, 255, 5]),
        ("set_list([])", []),
        ("set_list([-3])", [-3]),
    ],
)
def test_initiators(call, expected):
    assert one(call) == expected


# ----- modifiers


def test_repeat_list():
    assert unary([1, 2], "repeat_list(3, s)") == [1, 2, 1, 2, 1, 2]
    assert unary([1, 2], "repeat_list(1, s)") == [1, 2]
    assert unary([1, 2], "repeat_list(0, s)") == []


def test_reverse_list():
    assert unary([3, 4, 5, 6, 7], "reverse_list(s)") == [7, 6, 5, 4, 3]
    assert unary([], "reverse_list(s)") == []


def test_substitute():
    assert unary([1, 2, 1, 3], "substitute(s, 1, 9)") == [9, 2, 9, 3]
    assert unary([1, 2, 1, 3], "substitute(s, 4, 9)") == [1, 2, 1, 3]  # pattern absent
    assert unary([1, 2, 1, 3], "substitute(s, 3, 1)") == [1, 2, 1, 1]


def test_get_subsequence_with_jumps():
    seq = list(range(10))
    assert unary(seq, "get_subsequence_with_jumps(s, 3)") == [0, 3, 6, 9]
    assert unary(seq, "get_subsequence_with_jumps(s, 4)") == [0, 4, 8]
    assert unary(seq, "get_subsequence_with_jumps(s, 1)") == seq
    assert unary(seq, "get_subsequence_with_jumps(s, 20)") == [0]
    assert unary([5, 6, 7, 8], "get_subsequence_with_jumps(s, -2)") == [8, 6]  # seq[::-2]


def test_get_subsequence_between_indices():
    seq = list(range(10, 20))
    assert unary(seq, "get_subsequence_between_indices(s, 2, 5)") == [12, 13, 14]  # end exclusive
    assert unary(seq, "get_subsequence_between_indices(s, 0, 1)") == [10]
    assert unary(seq, "get_subsequence_between_indices(s, 8, 50)") == [18, 19]  # clipped like a slice
    assert unary(seq, "get_subsequence_between_indices(s, 5, 5)") == []
    assert unary(seq, "get_subsequence_between_indices(s, 7, 2)") == []


def test_max_n_is_heapq_nlargest():
    assert unary([3, 1, 3, 2], "max_n(s, 3)") == [3, 3, 2]  # descending, duplicates kept
    assert unary([3, 1, 3, 2], "max_n(s, 1)") == [3]
    assert unary([3, 1, 3, 2], "max_n(s, 10)") == [3, 3, 2, 1]
    assert unary([3, 1, 3, 2], "max_n(s, 0)") == []
    assert unary([3, 1, 3, 2], "max_n(s, -1)") == []
    assert unary([5, 9, 1, 9, 7], "max_n(s, 2)") == [9, 9]


def test_min_n_is_heapq_nsmallest():
    assert unary([3, 1, 3, 2], "min_n(s, 3)") == [1, 2, 3]  # ascending
    assert unary([3, 1, 1, 2], "min_n(s, 3)") == [1, 1, 2]
    assert unary([3, 1, 3, 2], "min_n(s, 1)") == [1]
    assert unary([3, 1, 3, 2], "min_n(s, 10)") == [1, 2, 3, 3]
    assert unary([3, 1, 3, 2], "min_n(s, 0)") == []
    assert unary([3, 1, 3, 2], "min_n(s, -1)") == []


def test_item_list_arithmetic():
    assert unary([1, 2, 3], "add_item_list(s, 10)") == [11, 12, 13]
    assert unary([10, 20], "subtract_item_list(s, 3)") == [7, 17]
    assert unary([1, 2], "subtract_item_list(s, 3)") == [-2, -1]
    assert unary([5, 6, 7, 8], "modulo_item_list(s, 3)") == [2, 0, 1, 2]
    assert unary([-1, 4], "modulo_item_list(s, 3)") == [2, 1]  # Python's modulo


def test_scan_add():
    assert unary([1, 2, 3, 4], "scan_add(s)") == [1, 3, 6, 10]
    assert unary([5, 0, 0, 1], "scan_add(s)") == [5, 5, 5, 6]
    assert unary([7], "scan_add(s)") == [7]
    assert unary([], "scan_add(s)") == []


# ----- filters (the three predicates)


@pytest.mark.parametrize(
    ("predicate", "values", "expected"),
    [
        ("is_even", [0, 1, 2, 3, 4, 5], [0, 2, 4]),
        ("is_odd", [0, 1, 2, 3, 4, 5], [1, 3, 5]),
        ("is_not_zero", [0, 3, 0, 4, 0], [3, 4]),
        ("is_even", [1, 3], []),
        ("is_odd", [-3, -2], [-3]),
    ],
)
def test_filter(predicate, values, expected):
    assert unary(values, f"filter({predicate}, s)") == expected


# ----- mergers


def test_add_two_lists_truncates_to_shorter():
    assert binary([1, 2, 3], [10, 20, 30], "add_two_lists") == [11, 22, 33]
    assert binary([1, 2, 3], [10, 20], "add_two_lists") == [11, 22]
    assert binary([1], [10, 20, 30], "add_two_lists") == [11]


def test_subtract_two_lists_truncates_to_shorter():
    assert binary([10, 20, 30], [1, 2], "subtract_two_lists") == [9, 18]
    assert binary([5], [1, 2, 3], "subtract_two_lists") == [4]
    assert binary([1, 2], [3, 1], "subtract_two_lists") == [-2, 1]
    assert binary([], [1, 2], "subtract_two_lists") == []


def test_modulo_two_lists_skips_zero_divisors():
    assert binary([5, 6, 7], [2, 0, 4], "modulo_two_lists") == [1, 3]
    assert binary([5, 6, 7], [3, 4, 5], "modulo_two_lists") == [2, 2, 2]
    assert binary([5, 6], [0, 0], "modulo_two_lists") == []
    assert binary([9, 9, 9], [4, 5], "modulo_two_lists") == [1, 4]  # also truncates


def test_concatenate():
    assert binary([1, 2], [3], "concatenate") == [1, 2, 3]
    assert binary([], [3, 4], "concatenate") == [3, 4]
    assert binary([3, 4], [], "concatenate") == [3, 4]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1, 2], [3, 4], [1, 3, 2, 4]),
        ([1, 2, 3, 4], [9], [1, 9, 2, 3, 4]),  # first longer: its tail appended
        ([1], [7, 8, 9], [1, 7, 8, 9]),  # second longer: its tail appended
        ([], [7, 8], [7, 8]),
        ([7, 8], [], [7, 8]),
    ],
)
def test_interleave(a, b, expected):
    assert binary(a, b, "interleave") == expected


def test_sequence_reused_and_chained():
    text = """sequence_1 = range_func_up(3, 7)
sequence_2 = repeat_num(5, 200)
sequence_3 = interleave(sequence_1, sequence_2)
output = sequence_3"""
    assert run_program(text) == [3, 200, 4, 200, 5, 200, 6, 200, 7, 200]


def test_run_lines_gives_every_line_output_last():
    program = parse_program(
        "sequence_1 = range_func_up(1, 3)\nsequence_2 = reverse_list(sequence_1)\n"
        "sequence_3 = concatenate(sequence_2, sequence_1)\noutput = sequence_2"
    )
    assert run_lines(program) == [[1, 2, 3], [3, 2, 1], [3, 2, 1, 1, 2, 3], [3, 2, 1]]
    assert run_program(program) == [3, 2, 1]


def test_lines_do_not_alias_each_other():
    """A later line must not mutate the list of an earlier one (e.g. in-place reverse)."""
    program = parse_program(
        "sequence_1 = set_list([1, 2, 3])\nsequence_2 = reverse_list(sequence_1)\n"
        "sequence_3 = set_list([1, 2, 3])\nsequence_4 = concatenate(sequence_1, sequence_3)\noutput = sequence_4"
    )
    values = run_lines(program)
    assert values[0] == [1, 2, 3]
    assert values[1] == [3, 2, 1]
    assert values[-1] == [1, 2, 3, 1, 2, 3]
