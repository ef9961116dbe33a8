"""Parser: round trip with the official text, comments, error messages naming the line, runtime guards, no eval."""

import builtins
import os
import time
import tracemalloc

import pytest

from dsl import DSLError, Line, Program, parse_program, render_program, run_lines, run_program

CANONICAL = [
    "sequence_1 = range_func_up(3, 7)\noutput = sequence_1",
    (
        "sequence_1 = range_func_up(3, 7)\nsequence_2 = repeat_num(5, 200)\n"
        "sequence_3 = interleave(sequence_1, sequence_2)\noutput = sequence_3"
    ),
    (
        "sequence_1 = set_list([5, 0, 255, 5])\nsequence_2 = filter(is_not_zero, sequence_1)\n"
        "sequence_3 = max_n(sequence_2, 2)\nsequence_4 = concatenate(sequence_3, sequence_1)\noutput = sequence_4"
    ),
    "sequence_1 = set_list([])\noutput = sequence_1",
    "sequence_1 = set_list([-3, 12])\nsequence_2 = subtract_item_list(sequence_1, -4)\noutput = sequence_2",
    (
        "sequence_1 = range_func_interval(0, 30, 4)\nsequence_2 = substitute(sequence_1, 8, 99)\n"
        "sequence_3 = get_subsequence_between_indices(sequence_2, 1, 4)\n"
        "sequence_4 = get_subsequence_with_jumps(sequence_2, 2)\n"
        "sequence_5 = modulo_two_lists(sequence_3, sequence_4)\n"
        "output = sequence_2"
    ),
    "a = range_func_up(1, 4)\nb_2 = repeat_list(2, a)\noutput = b_2",
]


@pytest.mark.parametrize("text", CANONICAL)
def test_round_trip(text):
    program = parse_program(text)
    assert render_program(program) == text
    assert parse_program(render_program(program)) == program


def test_parse_structure():
    program = parse_program(CANONICAL[2])
    assert program == Program(
        (
            Line("sequence_1", "set_list", ((5, 0, 255, 5),)),
            Line("sequence_2", "filter", ("is_not_zero", "sequence_1")),
            Line("sequence_3", "max_n", ("sequence_2", 2)),
            Line("sequence_4", "concatenate", ("sequence_3", "sequence_1")),
        ),
        "sequence_4",
    )
    assert program.num_lines == 5


def test_comments_blank_lines_and_spacing_are_ignored():
    plain = parse_program(CANONICAL[1])
    commented = """# program for the sequence below

sequence_1 = range_func_up(3, 7) # [3, 4, 5, 6, 7]
  sequence_2=repeat_num( 5 ,200 )   # [200, 200, 200, 200, 200]

sequence_3 = interleave(sequence_1,sequence_2) # [3, 200, 4, 200, 5, 200, 6, 200, 7, 200]
output = sequence_3 # [3, 200, 4, 200, 5, 200, 6, 200, 7, 200]
# trailing comment
"""
    assert parse_program(commented) == plain
    assert render_program(parse_program(commented)) == CANONICAL[1]
    assert parse_program(CANONICAL[1].replace("\n", "\r\n")) == plain


def test_render_with_values_is_the_official_commented_form():
    text = "sequence_1 = range_func_up(3, 5)\nsequence_2 = reverse_list(sequence_1)\noutput = sequence_2"
    program = parse_program(text)
    assert render_program(program, run_lines(program)) == (
        "sequence_1 = range_func_up(3, 5) # [3, 4, 5]\n"
        "sequence_2 = reverse_list(sequence_1) # [5, 4, 3]\n"
        "output = sequence_2 # [5, 4, 3]"
    )
    assert parse_program(render_program(program, run_lines(program))) == program


def test_render_with_wrong_number_of_value_lists_raises():
    program = parse_program("sequence_1 = range_func_up(3, 5)\noutput = sequence_1")
    with pytest.raises(ValueError):
        render_program(program, [[3, 4, 5]])


# ----- parse errors: DSLError whose message starts with the source line


PARSE_ERRORS = [
    ("unknown function", "sequence_1 = range_func_up(1, 3)\nsequence_2 = shuffle(sequence_1)\noutput = sequence_2", 2),
    ("too few args", "sequence_1 = range_func_up(1)\noutput = sequence_1", 1),
    (
        "too many args",
        "sequence_1 = range_func_up(1, 3)\nsequence_2 = reverse_list(sequence_1, 2)\noutput = sequence_2",
        2,
    ),
    ("no args", "sequence_1 = set_list()\noutput = sequence_1", 1),
    ("list for int", "sequence_1 = range_func_up([1, 2], 3)\noutput = sequence_1", 1),
    ("int for list", "sequence_1 = set_list(3)\noutput = sequence_1", 1),
    ("int for seq", "sequence_1 = range_func_up(1, 3)\nsequence_2 = reverse_list(5)\noutput = sequence_2", 2),
    (
        "name for int",
        "sequence_1 = range_func_up(1, 3)\nsequence_2 = repeat_num(sequence_1, 2)\noutput = sequence_2",
        2,
    ),
    (
        "undefined ref",
        "sequence_1 = range_func_up(1, 3)\nsequence_2 = reverse_list(sequence_9)\noutput = sequence_2",
        2,
    ),
    ("forward ref", "sequence_1 = reverse_list(sequence_2)\nsequence_2 = range_func_up(1, 3)\noutput = sequence_2", 1),
    ("self ref", "sequence_1 = reverse_list(sequence_1)\noutput = sequence_1", 1),
    ("predicate called", "sequence_1 = range_func_up(1, 3)\nsequence_2 = is_even(sequence_1)\noutput = sequence_2", 2),
    (
        "predicate as seq",
        "sequence_1 = range_func_up(1, 3)\nsequence_2 = reverse_list(is_odd)\noutput = sequence_2",
        2,
    ),
    (
        "seq as predicate",
        "sequence_1 = range_func_up(1, 3)\nsequence_2 = filter(sequence_1, sequence_1)\noutput = sequence_2",
        2,
    ),
    (
        "unknown predicate",
        "sequence_1 = range_func_up(1, 3)\nsequence_2 = filter(is_prime, sequence_1)\noutput = sequence_2",
        2,
    ),
    ("undefined output", "sequence_1 = range_func_up(1, 3)\noutput = sequence_2", 2),
    (
        "text after output",
        "sequence_1 = range_func_up(1, 3)\noutput = sequence_1\nsequence_2 = reverse_list(sequence_1)",
        3,
    ),
    ("second output", "sequence_1 = range_func_up(1, 3)\noutput = sequence_1\noutput = sequence_1", 3),
    ("assign reserved", "output = range_func_up(1, 3)\noutput = output", 1),
    ("assign function name", "reverse_list = range_func_up(1, 3)\noutput = reverse_list", 1),
    ("dunder import", "sequence_1 = __import__('os').system('ls')\noutput = sequence_1", 1),
    ("statement after call", "sequence_1 = range_func_up(1, 2); import os\noutput = sequence_1", 1),
    ("import line", "import os\nsequence_1 = range_func_up(1, 2)\noutput = sequence_1", 1),
    ("expression arg", "sequence_1 = range_func_up(1 + 1, 2)\noutput = sequence_1", 1),
    ("power arg", "sequence_1 = range_func_up(0, 10**12)\noutput = sequence_1", 1),
    ("string arg", "sequence_1 = set_list('abc')\noutput = sequence_1", 1),
    ("float arg", "sequence_1 = range_func_up(1.5, 2)\noutput = sequence_1", 1),
    ("nested list", "sequence_1 = set_list([[1], 2])\noutput = sequence_1", 1),
    ("name in list", "sequence_1 = set_list([1, x])\noutput = sequence_1", 1),
    ("unterminated list", "sequence_1 = set_list([1, 2)\noutput = sequence_1", 1),
    ("empty argument", "sequence_1 = range_func_up(1, , 2)\noutput = sequence_1", 1),
    ("trailing comma", "sequence_1 = range_func_up(1, 2,)\noutput = sequence_1", 1),
    ("missing comma", "sequence_1 = range_func_up(1 2)\noutput = sequence_1", 1),
    ("missing paren", "sequence_1 = range_func_up(1, 2\noutput = sequence_1", 1),
    ("bare name", "sequence_1\noutput = sequence_1", 1),
    ("huge literal", "sequence_1 = range_func_up(1, " + "9" * 5000 + ")\noutput = sequence_1", 1),
]


@pytest.mark.parametrize(("text", "lineno"), [(t, n) for _, t, n in PARSE_ERRORS], ids=[i for i, _, _ in PARSE_ERRORS])
def test_parse_error_names_the_line(text, lineno):
    with pytest.raises(DSLError) as info:
        parse_program(text)
    assert str(info.value).startswith(f"line {lineno}: ")
    assert info.value.lineno == lineno


def test_line_numbers_count_blank_and_comment_lines():
    text = (
        "# header\n\nsequence_1 = range_func_up(1, 3)\n\n# note\nsequence_2 = shuffle(sequence_1)\noutput = sequence_2"
    )
    with pytest.raises(DSLError, match=r"^line 6: "):
        parse_program(text)


@pytest.mark.parametrize(
    "text",
    [
        "sequence_1 = range_func_up(1, 3)",
        "sequence_1 = range_func_up(1, 3)\n# output = sequence_1",
        "",
        "\n\n# nothing\n",
    ],
)
def test_missing_output_line(text):
    with pytest.raises(DSLError, match="output") as info:
        parse_program(text)
    assert not str(info.value).startswith("line ")


def test_non_text_is_rejected():
    with pytest.raises(DSLError):
        parse_program(b"sequence_1 = range_func_up(1, 3)\noutput = sequence_1")  # type: ignore[arg-type]


def test_dsl_error_is_a_value_error():
    assert issubclass(DSLError, ValueError)


# ----- runtime errors: DSLError naming the line, fast, without huge allocations


RUNTIME_ERRORS = [
    (
        "interval zero",
        "sequence_1 = range_func_up(1, 3)\nsequence_2 = range_func_interval(0, 10, 0)\noutput = sequence_2",
        2,
    ),
    (
        "jump zero",
        "sequence_1 = range_func_up(1, 3)\nsequence_2 = get_subsequence_with_jumps(sequence_1, 0)\n"
        "output = sequence_2",
        2,
    ),
    (
        "modulo zero",
        "sequence_1 = range_func_up(1, 3)\nsequence_2 = modulo_item_list(sequence_1, 0)\noutput = sequence_2",
        2,
    ),
    (
        "repeat_list bomb",
        "sequence_1 = range_func_up(1, 3)\nsequence_2 = repeat_list(1000000000, sequence_1)\noutput = sequence_2",
        2,
    ),
    ("range bomb", "sequence_1 = range_func_up(0, 1000000000000)\noutput = sequence_1", 1),
    ("interval bomb", "sequence_1 = range_func_interval(0, 1000000000000, 1)\noutput = sequence_1", 1),
    ("repeat_num bomb", "sequence_1 = repeat_num(1000000000000, 7)\noutput = sequence_1", 1),
    (
        "doubling bomb",
        "sequence_1 = repeat_num(600000, 1)\nsequence_2 = concatenate(sequence_1, sequence_1)\noutput = sequence_2",
        2,
    ),
]


@pytest.mark.parametrize(
    ("text", "lineno"), [(t, n) for _, t, n in RUNTIME_ERRORS], ids=[i for i, _, _ in RUNTIME_ERRORS]
)
def test_runtime_error_names_the_line_quickly(text, lineno):
    program = parse_program(text)  # parses fine: the failure is at run time
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(DSLError) as info:
            run_program(program)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(info.value).startswith(f"line {lineno}: ")
    assert elapsed < 2.0
    assert peak < 64 * 2**20  # the doubling case builds one 600k list (~5 MB); nothing near a billion elements


def test_runtime_error_line_counts_comment_lines():
    text = "# c\nsequence_1 = range_func_up(1, 3)\n\nsequence_2 = modulo_item_list(sequence_1, 0)\noutput = sequence_2"
    with pytest.raises(DSLError, match=r"^line 4: "):
        run_program(text)


def test_max_length_is_inclusive_and_configurable():
    text = "sequence_1 = repeat_num(10, 1)\noutput = sequence_1"
    assert run_program(text, max_length=10) == [1] * 10
    with pytest.raises(DSLError, match=r"^line 1: "):
        run_program(text, max_length=9)


def test_range_bound_beyond_ssize_t_raises_dsl_error():
    # 10**19 > 2**63 - 1: len(range(...)) overflows in the interpreter's size check
    with pytest.raises(DSLError, match=r"^line 1: "):
        run_program("sequence_1 = range_func_up(0, 10000000000000000000)\noutput = sequence_1")


# ----- no eval / exec


def test_dunder_import_text_is_rejected_without_running(monkeypatch):
    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a) or 0)
    for text in (
        "sequence_1 = __import__('os').system('ls')\noutput = sequence_1",
        "sequence_1 = range_func_up(1, 2)\nsequence_2 = __import__(sequence_1)\noutput = sequence_2",
    ):
        with pytest.raises(DSLError):
            run_program(text)
    assert calls == []


def test_run_program_never_calls_eval_or_exec(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("eval/exec/compile called")

    for name in ("eval", "exec", "compile"):
        monkeypatch.setattr(builtins, name, forbidden)
    text = (
        "sequence_1 = set_list([4, 1, 3, 0])\nsequence_2 = filter(is_not_zero, sequence_1)\n"
        "sequence_3 = scan_add(sequence_2)\nsequence_4 = interleave(sequence_3, sequence_1)\noutput = sequence_4"
    )
    assert run_program(text) == [4, 4, 5, 1, 8, 3, 0]


@pytest.mark.parametrize("literal", ["[1 2 3]", "[1,,2]", "[,1]", "[1, x]"])
def test_list_literals_need_integers_separated_by_commas(literal):
    with pytest.raises(DSLError, match=r"^line 1: "):
        parse_program(f"sequence_1 = set_list({literal})\noutput = sequence_1")


def test_list_literal_may_end_with_a_comma():
    assert run_program("sequence_1 = set_list([1, 2,])\noutput = sequence_1") == [1, 2]
