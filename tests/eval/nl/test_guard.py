"""Leakage guard: the paper's leak cases and gaps, each flag alone, verdict priority, strict mode, cleaning."""

from __future__ import annotations

import pytest

from eval.nl.guard import (
    GUARD_VERDICTS,
    GuardConfig,
    GuardResult,
    check_word_problem,
    clean_word_problem,
    has_operator_leak,
    has_paren_leak,
    is_degenerate_repetition,
    missing_placeholders,
)

STRICT = GuardConfig(strict=True)
CLEAN = "A baker bakes {A} trays of rolls and then {B} more trays. How many trays are there?"


@pytest.mark.parametrize("text", ["A + B", "{A}*{B}", "3/4", "{A} + 7", "(A) / B", "he has {A}+{B} coins", "2 * 3"])
def test_operator_adjacency_leaks(text: str) -> None:
    assert has_operator_leak(text)
    assert check_word_problem(text, []).verdict == "leak"


@pytest.mark.parametrize("text", ["({A} apples and pears", "(A lot", "the total of B)", "{B}) left", "( {C}"])
def test_parentheses_next_to_variables_leak(text: str) -> None:
    assert has_paren_leak(text)
    assert not has_operator_leak(text)
    assert check_word_problem(text, []).verdict == "paren_leak"


@pytest.mark.parametrize(
    "text",
    [
        "A - B",
        "5 - 3",
        "(5 - 3)",
        "twenty-one apples",
        "a well-known bakery",
        "Each box (for example) holds {A} apples.",
        "**Total** trays",
        "C++ is a language",
    ],
)
def test_documented_gaps_and_prose_pass_by_default(text: str) -> None:
    result = check_word_problem(text, [])
    assert result.verdict == "pass"
    assert result.passed and result.leak_pass


@pytest.mark.parametrize("text", ["A - B", "5 - 3", "{A}-{B}", "(5 - 3)", "the total = 5", "A × B", "6 ÷ 2", "A^2"])
def test_strict_mode_catches_the_gaps(text: str) -> None:
    assert check_word_problem(text, [], STRICT).verdict == "leak"


def test_strict_mode_flags_digit_adjacent_parentheses_and_keeps_hyphens() -> None:
    assert has_paren_leak("(5 - 3)", STRICT) and not has_paren_leak("(5 - 3)")
    assert check_word_problem("She buys (12 apples", [], STRICT).verdict == "paren_leak"
    for text in ("twenty-one apples", "a well-known bakery", "an X-ray of a 3-year-old"):
        assert check_word_problem(text, [], STRICT).verdict == "pass"


def test_operator_class_is_configurable() -> None:
    assert check_word_problem("A - B", [], GuardConfig(operator_class="[-+*/]")).verdict == "leak"
    assert check_word_problem("A / B", [], GuardConfig(operator_class="[+*]")).verdict == "pass"


def test_missing_placeholders_in_order_without_repeats() -> None:
    assert missing_placeholders("Take {A} and {C}.", ["A", "B", "C", "B", "D"]) == ("B", "D")
    assert missing_placeholders("Take {A} and {B}.", ["A", "B", "A"]) == ()
    assert missing_placeholders("Take A and { B }.", ["A", "B"]) == ("A", "B")


def test_degenerate_repetition() -> None:
    loop = "and then he adds the apples to the basket " * 3
    assert is_degenerate_repetition(loop, 6, 3)
    assert not is_degenerate_repetition(loop, 6, 4)
    assert not is_degenerate_repetition(CLEAN, 6, 3)
    assert is_degenerate_repetition("One two THREE. one two three, one Two three", 3, 3)
    assert not is_degenerate_repetition("one two", 6, 3)


def test_each_flag_alone() -> None:
    assert check_word_problem(CLEAN, ["A", "B"]) == GuardResult("pass")
    missing = check_word_problem(CLEAN, ["A", "B", "C"])
    assert missing == GuardResult("missing_placeholder", missing=("C",))
    loop = CLEAN + " " + " ".join(["he counts the trays one more time"] * 3)
    assert check_word_problem(loop, ["A", "B"]) == GuardResult("degenerate", degenerate=True)
    leak = check_word_problem("A baker bakes {A}*{B} rolls.", ["A", "B"])
    assert leak == GuardResult("leak", operator_leak=True)
    paren = check_word_problem("A baker bakes ({A} and {B}) rolls.", ["A", "B"])
    assert paren == GuardResult("paren_leak", paren_leak=True)
    assert paren.leak_pass and not paren.passed


def test_priority_order_with_every_flag_set() -> None:
    text = "(A " + "they add {A}*{B} then add it again " * 3
    result = check_word_problem(text, ["A", "B", "Z"])
    assert (result.operator_leak, result.paren_leak, result.missing, result.degenerate) == (True, True, ("Z",), True)
    assert result.verdict == "leak" and not result.leak_pass
    no_operator = check_word_problem(text.replace("*", " and "), ["A", "B", "Z"])
    assert no_operator.verdict == "paren_leak"
    no_paren = check_word_problem(text.replace("*", " and ").replace("(A ", ""), ["A", "B", "Z"])
    assert no_paren.verdict == "missing_placeholder" and no_paren.degenerate


@pytest.mark.parametrize("text", [None, "", "   \n\t"])
def test_no_output(text: str | None) -> None:
    result = check_word_problem(text, ["A"])
    assert result == GuardResult("no_output")
    assert not result.passed


def test_verdicts_are_closed() -> None:
    assert GUARD_VERDICTS == ("pass", "no_output", "leak", "paren_leak", "missing_placeholder", "degenerate")
    with pytest.raises(ValueError, match="verdict"):
        GuardResult("ok")


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"operator_class": ""}, "operator_class"),
        ({"operator_class": "[+*/"}, "operator_class"),
        ({"repetition_ngram": 0}, "repetition_ngram"),
        ({"repetition_count": 1}, "repetition_count"),
    ],
)
def test_config_validation(kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        GuardConfig(**kwargs)  # type: ignore[arg-type]


def test_clean_word_problem_strips_label_quotes_and_appended_answer() -> None:
    raw = '  **Word problem:** "A baker has {A} trays and {B} more."\n\nExpression: A + B\n'
    assert clean_word_problem(raw) == "A baker has {A} trays and {B} more."
    assert clean_word_problem("Word Problem: Tom has {A} pens.\nAnswer: {A}") == "Tom has {A} pens."
    assert clean_word_problem("“Tom has {A} pens.”") == "Tom has {A} pens."
    assert clean_word_problem(None) == ""
    quoted_inside = '"Hi," she said, "{A} pens."'
    assert clean_word_problem(quoted_inside) == quoted_inside


def test_clean_word_problem_keeps_leaks_in_the_body() -> None:
    raw = "Word problem: Tom has {A}+{B} pens, the expression appears inline.\nExpression: A + B"
    cleaned = clean_word_problem(raw)
    assert cleaned == "Tom has {A}+{B} pens, the expression appears inline."
    assert check_word_problem(cleaned, ["A", "B"]).verdict == "leak"
    assert clean_word_problem("Tom's expression: {A} pens (A") == "Tom's expression: {A} pens (A"
