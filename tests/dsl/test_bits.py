"""Uniform-prior code length (official get_num_bits_per_program_uniform(program, 24, 256)) and compression rate."""

import math

import pytest

from dsl import Line, Program, compression_rate, parse_program, program_bits

F = math.log2(25)  # one line's function choice: log2(NUM_FUNCTIONS + 1)


def approx(value: float):
    return pytest.approx(value, rel=1e-12)


PAPER_EXAMPLE = """sequence_1 = range_func_up(3, 7)
sequence_2 = repeat_num(5, 200)
sequence_3 = interleave(sequence_1, sequence_2)
output = sequence_3"""

PAPER_EXAMPLE_COMMENTED = """# a leading comment line
sequence_1 = range_func_up(3, 7) # [3, 4, 5, 6, 7]
sequence_2 = repeat_num(5, 200) # [200, 200, 200, 200, 200]

sequence_3 = interleave(sequence_1, sequence_2) # [3, 200, 4, 200, 5, 200, 6, 200, 7, 200]
output = sequence_3 # [3, 200, 4, 200, 5, 200, 6, 200, 7, 200]"""


def test_paper_example():
    assert program_bits(PAPER_EXAMPLE) == approx(4 * math.log2(25) + 16 + 8 + math.log2(20) + 2 * math.log2(3))


def test_comments_and_blank_lines_do_not_change_bits():
    expected = 4 * math.log2(25) + 16 + 8 + math.log2(20) + 2 * math.log2(3)
    assert program_bits(PAPER_EXAMPLE_COMMENTED) == approx(expected)
    assert program_bits(PAPER_EXAMPLE_COMMENTED) == program_bits(PAPER_EXAMPLE)


def test_single_line():
    assert program_bits("sequence_1 = range_func_up(1, 2)\noutput = sequence_1") == approx(2 * math.log2(25) + 16)


def test_set_list_and_filter():
    text = "sequence_1 = set_list([1, 2, 3, 4, 5])\nsequence_2 = filter(is_even, sequence_1)\noutput = sequence_2"
    # set_list: 5 values * 8 bits; filter at line index 1: log2(2), the predicate is free
    assert program_bits(text) == approx(3 * math.log2(25) + 5 * 8 + math.log2(2))


def test_set_list_length_matters():
    assert program_bits("sequence_1 = set_list([])\noutput = sequence_1") == approx(2 * math.log2(25))
    assert program_bits("sequence_1 = set_list([7, 7, 7])\noutput = sequence_1") == approx(2 * math.log2(25) + 24)


def test_reference_on_line_index_4():
    text = """sequence_1 = range_func_interval(0, 20, 4)
sequence_2 = repeat_num(3, 7)
sequence_3 = set_list([1, 2])
sequence_4 = range_func_up(1, 3)
sequence_5 = reverse_list(sequence_1)
sequence_6 = concatenate(sequence_5, sequence_2)
output = sequence_6"""
    expected = (
        7 * math.log2(25)
        + (16 + 3)  # range_func_interval
        + (8 + math.log2(20))  # repeat_num
        + 2 * 8  # set_list of two values
        + 16  # range_func_up
        + math.log2(5)  # reverse_list at line index 4
        + 2 * math.log2(6)  # concatenate at line index 5
    )
    assert program_bits(text) == approx(expected)


def test_list_modifiers():
    text = """sequence_1 = range_func_up(0, 9)
sequence_2 = repeat_list(2, sequence_1)
sequence_3 = get_subsequence_with_jumps(sequence_2, 2)
sequence_4 = get_subsequence_between_indices(sequence_3, 1, 4)
sequence_5 = substitute(sequence_4, 2, 7)
sequence_6 = max_n(sequence_5, 2)
sequence_7 = min_n(sequence_5, 2)
output = sequence_7"""
    expected = (
        8 * math.log2(25)
        + 16
        + (math.log2(2) + 3)  # repeat_list, index 1
        + (math.log2(3) + 3)  # get_subsequence_with_jumps, index 2
        + (math.log2(4) + 16)  # get_subsequence_between_indices, index 3
        + (math.log2(5) + 16)  # substitute, index 4
        + (8 + math.log2(6))  # max_n, index 5
        + (8 + math.log2(7))  # min_n, index 6
    )
    assert program_bits(text) == approx(expected)


def test_item_ops_scan_and_two_list_mergers():
    text = """sequence_1 = set_list([4, 5])
sequence_2 = add_item_list(sequence_1, 3)
sequence_3 = subtract_item_list(sequence_1, 1)
sequence_4 = modulo_item_list(sequence_1, 3)
sequence_5 = scan_add(sequence_4)
sequence_6 = add_two_lists(sequence_2, sequence_3)
sequence_7 = subtract_two_lists(sequence_2, sequence_3)
sequence_8 = modulo_two_lists(sequence_2, sequence_3)
sequence_9 = interleave(sequence_8, sequence_7)
output = sequence_9"""
    expected = (
        10 * math.log2(25)
        + 2 * 8
        + (8 + math.log2(2))
        + (8 + math.log2(3))
        + (8 + math.log2(4))
        + math.log2(5)  # scan_add
        + 2 * math.log2(6)
        + 2 * math.log2(7)
        + 2 * math.log2(8)
        + 2 * math.log2(9)
    )
    assert program_bits(text) == approx(expected)


# One line per function at line index 2 (r = log2(3)), preceded by two initiators (16 bits each).
R = math.log2(3)
PER_FUNCTION = [
    ("range_func_up(1, 5)", 16),
    ("range_func_interval(1, 9, 2)", 16 + 3),
    ("repeat_num(4, 9)", 8 + math.log2(20)),
    ("set_list([1, 2, 3, 4])", 32),
    ("repeat_list(2, sequence_1)", R + 3),
    ("get_subsequence_with_jumps(sequence_1, 2)", R + 3),
    ("get_subsequence_between_indices(sequence_1, 0, 2)", R + 16),
    ("substitute(sequence_1, 1, 2)", R + 16),
    ("add_item_list(sequence_1, 1)", 8 + R),
    ("subtract_item_list(sequence_1, 1)", 8 + R),
    ("modulo_item_list(sequence_1, 2)", 8 + R),
    ("max_n(sequence_1, 2)", 8 + R),
    ("min_n(sequence_1, 2)", 8 + R),
    ("reverse_list(sequence_1)", R),
    ("scan_add(sequence_1)", R),
    ("filter(is_odd, sequence_1)", R),
    ("filter(is_not_zero, sequence_2)", R),
    ("add_two_lists(sequence_1, sequence_2)", 2 * R),
    ("subtract_two_lists(sequence_1, sequence_2)", 2 * R),
    ("modulo_two_lists(sequence_1, sequence_2)", 2 * R),
    ("concatenate(sequence_1, sequence_2)", 2 * R),
    ("interleave(sequence_2, sequence_1)", 2 * R),
]


@pytest.mark.parametrize(("call", "param_bits"), PER_FUNCTION, ids=[c.split("(")[0] for c, _ in PER_FUNCTION])
def test_each_function_at_line_index_2(call, param_bits):
    text = (
        f"sequence_1 = range_func_up(1, 5)\nsequence_2 = range_func_up(2, 6)\nsequence_3 = {call}\noutput = sequence_3"
    )
    assert program_bits(text) == approx(4 * math.log2(25) + 16 + 16 + param_bits)


def test_text_and_program_alike():
    program = parse_program(PAPER_EXAMPLE)
    assert program_bits(program) == program_bits(PAPER_EXAMPLE)
    built = Program(
        (
            Line("sequence_1", "range_func_up", (3, 7)),
            Line("sequence_2", "repeat_num", (5, 200)),
            Line("sequence_3", "interleave", ("sequence_1", "sequence_2")),
        ),
        "sequence_3",
    )
    assert built == program
    assert program_bits(built) == approx(4 * math.log2(25) + 16 + 8 + math.log2(20) + 2 * math.log2(3))


def test_bits_do_not_depend_on_literal_values():
    a = program_bits("sequence_1 = range_func_up(0, 1)\nsequence_2 = repeat_num(2, 3)\noutput = sequence_2")
    b = program_bits("sequence_1 = range_func_up(100, 250)\nsequence_2 = repeat_num(25, 255)\noutput = sequence_2")
    assert a == b


def test_num_functions_and_number_range_parameters():
    text = "sequence_1 = set_list([1, 2, 3])\nsequence_2 = add_item_list(sequence_1, 1)\noutput = sequence_2"
    assert program_bits(text, num_functions=24, number_range=256) == approx(3 * math.log2(25) + 24 + 8 + 1)
    assert program_bits(text, num_functions=15, number_range=16) == approx(3 * math.log2(16) + 3 * 4 + 4 + 1)


def test_unknown_function_in_built_program_raises():
    with pytest.raises(ValueError):
        program_bits(Program((Line("sequence_1", "no_such_function", ()),), "sequence_1"))


# ----- compression rate


def test_compression_rate_hand_values():
    assert compression_rate(63.0, 8) == pytest.approx(1.0, rel=1e-12)  # (1 + 63) / 64
    assert compression_rate(0.0, 1) == pytest.approx(0.125, rel=1e-12)
    assert compression_rate(15.0, 4) == pytest.approx(0.5, rel=1e-12)
    bits = 4 * math.log2(25) + 16 + 8 + math.log2(20) + 2 * math.log2(3)
    assert compression_rate(bits, 10) == pytest.approx((1 + bits) / 80, rel=1e-12)


def test_compression_rate_of_program():
    bits = program_bits(PAPER_EXAMPLE)
    assert compression_rate(bits, 10) == pytest.approx((1 + bits) / (8 * 10), rel=1e-12)
    assert compression_rate(bits, 10) < 1.0  # the example program beats raw bytes


@pytest.mark.parametrize("length", [0, -1])
def test_compression_rate_rejects_non_positive_length(length):
    with pytest.raises(ValueError):
        compression_rate(10.0, length)
