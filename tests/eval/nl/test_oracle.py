"""Symbolic oracle: answer extraction, arithmetic/logic/assembly verdicts, canonical forms, limits and caching."""

from __future__ import annotations

import re

import pytest
import sympy

from dsl.expr.arithmetic import to_sympy
from dsl.expr.logic import LOGIC_SYNTAX
from dsl.expr.serialize import ARITHMETIC, parse_infix, parse_sexpr, to_infix
from dsl.expr.suite import SuiteConfig, build_suite
from dsl.expr.tree import Node
from eval.nl import oracle
from eval.nl.oracle import VERDICTS, Judgement, canonical_form, error_type, extract_expression, judge


def arith(text: str) -> Node:
    return parse_infix(text, ARITHMETIC)


def logic(text: str) -> Node:
    return parse_infix(text, LOGIC_SYNTAX)


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("The answer.\nExpression: A + B", "A + B"),
        ("Expression: A - B\nWait, no.\nexpression: A * B\nDone.", "A * B"),
        ("**Expression:** (A + B) / C", "(A + B) / C"),
        ("**Expression**: A / 3", "A / 3"),
        ("Expression: `{A} * {B}`.", "A * B"),
        ("Expression: $A + 3$", "A + 3"),
        ("Expression: E = A + B", "A + B"),
        ("Expression: A + B = ?", "A + B"),
        ("Expression: Total cost = A * B = 12", "A * B"),
        ("Expression:\n```\nA - (B - C)\n```", "A - (B - C)"),
        ("Expression: (A +\n  B) * C", "(A + B) * C"),
        ("Some reasoning.\n```text\nA + 1\nA + B\n```\nThat is my answer", "A + B"),
        ("Let me think.\n\nA * (B + C)\n\n", "A * (B + C)"),
        ("Expression: A \\times (B \\div 2)", "A * (B / 2)"),
        ("Expression: A => B", "A => B"),
        ("Expression: A <=> (B <-> C)", "A <=> (B <-> C)"),
        ("Expression: (mount (polish red-gear) blue-plate).", "(mount (polish red-gear) blue-plate)"),
    ],
)
def test_extract_expression(completion: str, expected: str) -> None:
    assert extract_expression(completion) == expected


@pytest.mark.parametrize("completion", [None, "", "  \n ", "```\n```", "Expression: $$", "Expression:"])
def test_extract_expression_none(completion: str | None) -> None:
    assert extract_expression(completion) is None


@pytest.mark.parametrize(
    ("completion", "target"),
    [
        ("Expression: A + B", "B + A"),
        ("Expression: (A + B) / C", "A / C + B / C"),
        ("Expression: 2 * A", "A + A"),
        ("Expression: {A} + {B}", "A + B"),
        ("Expression: A × (B ÷ 3)", "A * (B / 3)"),
        ("Expression: A / (B / C)", "A * C / B"),
        ("Expression: -(B - A)", "A - B"),
    ],
)
def test_arithmetic_correct(completion: str, target: str) -> None:
    result = judge(completion, arith(target), "arithmetic")
    assert result.verdict == "correct" and result.correct
    assert result.canonical == canonical_form(target, "arithmetic")


@pytest.mark.parametrize(
    ("completion", "target"),
    [("A - B", "B - A"), ("A / B", "B / A"), ("A + B * C", "(A + B) * C"), ("A / (B - B)", "A"), ("A + C", "A + B")],
)
def test_arithmetic_wrong(completion: str, target: str) -> None:
    result = judge(completion, arith(target), "arithmetic")
    assert result.verdict == "wrong" and not result.correct
    assert result.extracted == completion and result.error is None


@pytest.mark.parametrize(
    ("predicted", "target"),
    [("A + B", "B + A"), ("A - B", "B - A"), ("(A - B) / (B - A)", "-1"), ("A * (B + C)", "A * B + A * C")],
)
def test_zero_test_agrees_with_sympy_simplify(predicted: str, target: str) -> None:
    paper = sympy.simplify(to_sympy(arith(predicted)) - to_sympy(arith(target))) == 0
    assert (judge(predicted, arith(target), "arithmetic").verdict == "correct") == paper


def test_arithmetic_canonical_forms() -> None:
    same = ["(A + B) / C", "A / C + B / C", "B / C + A / C", "2 * (A + B) / (2 * C)"]
    assert len({canonical_form(text, "arithmetic") for text in same}) == 1
    different = ["A - B", "B - A", "A / B", "A * B", "A + B"]
    assert len({canonical_form(text, "arithmetic") for text in different}) == len(different)
    assert canonical_form("A + ", "arithmetic") is None


@pytest.mark.parametrize("completion", ["I could not solve this.", "Expression: A ++", "Expression: (A + B", "A ^ B"])
def test_parse_error(completion: str) -> None:
    result = judge(completion, arith("A + B"), "arithmetic")
    assert result.verdict == "parse_error"
    assert result.canonical is None and result.error


@pytest.mark.parametrize("completion", [None, "", "   "])
def test_no_output(completion: str | None) -> None:
    assert judge(completion, arith("A"), "arithmetic") == Judgement("no_output")


def test_nothing_extractable_is_a_parse_error() -> None:
    result = judge("$$", arith("A"), "arithmetic")
    assert result.verdict == "parse_error" and result.extracted is None


def test_limits() -> None:
    too_many_ops = judge("Expression: " + "A + " * 65 + "A", arith("A"), "arithmetic")
    assert too_many_ops.verdict == "parse_error" and "operators" in (too_many_ops.error or "")
    ok = judge("Expression: " + "A + " * 64 + "A", arith("65 * A"), "arithmetic")
    assert ok.verdict == "correct"
    too_long = judge("Expression: " + "A + " * 300 + "A", arith("A"), "arithmetic")
    assert too_long.verdict == "parse_error" and "1000" in (too_long.error or "")
    too_deep = judge("Expression: " + "(" * 450 + "A" + ")" * 450, arith("A"), "arithmetic")
    assert too_deep.verdict == "parse_error"


@pytest.mark.parametrize(
    ("completion", "target", "verdict"),
    [
        ("Expression: A -> B", "A -> B", "correct"),
        ("Expression: B -> A", "A -> B", "wrong"),
        ("Expression: B & A", "A & B", "correct"),
        ("Expression: (A ^ B) ^ C", "A ^ (B ^ C)", "correct"),
        ("Expression: A <=> B", "A <-> B", "correct"),
        ("Expression: A | (A & C)", "A", "correct"),
        ("Expression: A | B", "A & B", "wrong"),
        ("Expression: A + B", "A | B", "parse_error"),
    ],
)
def test_logic(completion: str, target: str, verdict: str) -> None:
    assert judge(completion, logic(target), "logic").verdict == verdict


def test_logic_canonical_forms() -> None:
    assert canonical_form("A & B", "logic") == canonical_form("B & A", "logic") == "A,B:8"
    assert canonical_form("A -> B", "logic") != canonical_form("B -> A", "logic")
    # A | (A & C) does not depend on C: same canonical form as A.
    assert canonical_form("A | (A & C)", "logic") == canonical_form("A", "logic") == "A:2"
    assert canonical_form("A -> A", "logic") == ":1"
    wide = " & ".join("ABCDEFGHIJ")
    assert canonical_form(wide, "logic") == canonical_form(" & ".join(reversed("ABCDEFGHIJ")), "logic")


@pytest.mark.parametrize(
    ("completion", "target", "verdict"),
    [
        ("Expression: (weld blue-plate red-gear)", "(weld red-gear blue-plate)", "correct"),
        ("Expression: (mount blue-plate red-gear)", "(mount red-gear blue-plate)", "wrong"),
        ("(mix (polish red-gear) gold-cog blue-plate)", "(mix blue-plate gold-cog (polish red-gear))", "correct"),
        ("Expression: (weld red-gear", "(weld red-gear blue-plate)", "parse_error"),
    ],
)
def test_assembly(completion: str, target: str, verdict: str) -> None:
    result = judge(completion, parse_sexpr(target), "assembly")
    assert result.verdict == verdict
    if verdict == "correct":
        assert result.canonical == canonical_form(target, "assembly")


def test_agreeing_extractors_cost_one_parse_and_one_equivalence() -> None:
    oracle._parse.cache_clear()
    oracle._equivalent.cache_clear()
    target = arith("(A + B) / (C - 1)")
    completions = ["Expression: (A+B)/(C-1)", "**Expression:** `(A+B)/(C-1)`", "So\n(A+B)/(C-1).", "E = (A+B)/(C-1)"]
    results = [judge(text, target, "arithmetic") for text in completions]
    assert {r.verdict for r in results} == {"correct"}
    assert oracle._parse.cache_info().misses == 1
    assert oracle._equivalent.cache_info().misses == 1


def test_closed_sets_and_unknown_domain() -> None:
    assert VERDICTS == ("correct", "wrong", "parse_error", "no_output")
    with pytest.raises(ValueError, match="verdict"):
        Judgement("maybe")
    with pytest.raises(ValueError, match="domain"):
        judge("A", arith("A"), "geometry")


@pytest.mark.parametrize(
    ("completion", "target", "expected"),
    [
        ("Expression: A + B", "A + B", None),
        ("Expression: A + B + C", "A + B", "operator_count"),
        ("Expression: A * B", "A + B", "operators"),
        ("Expression: A + C", "A + B", "leaves"),
        ("Expression: A - (B - C)", "(A - B) - C", "structure"),
        ("Expression: B - A", "A - B", "structure"),
        ("Expression: A +", "A + B", "parse_error"),
        (None, "A + B", "no_output"),
    ],
)
def test_error_types(completion: str | None, target: str, expected: str | None) -> None:
    node = arith(target)
    assert error_type(judge(completion, node, "arithmetic"), node, "arithmetic") == expected


ISSUE_TARGET = "(- 6 (* F (+ (+ (* A 10) (* D D)) G)))"


@pytest.mark.parametrize(
    ("completion", "target"),
    [
        ("Expression: 6 - F*(10*A + D**2 + G)", ISSUE_TARGET),
        ("Expression: 6 - F*(10*A + D^2 + G)", ISSUE_TARGET),
        ("Expression: 6 - F*(10*A + D² + G)", ISSUE_TARGET),
        ("Expression: 6 − F(10A + D² + G)", ISSUE_TARGET),
        ("Expression: $6 - F \\cdot (10A + D^{2} + G)$", ISSUE_TARGET),
        ("Expression: -F*D**2 - 10*A*F - F*G + 6", ISSUE_TARGET),
        ("Expression: A³", "(* (* A A) A)"),
        ("Expression: (A + B)^2", "(* (+ A B) (+ A B))"),
        ("Expression: AB^2 / C", "(/ (* A (* B B)) C)"),
        ("Expression: 2(A + B)^2", "(* 2 (* (+ A B) (+ B A)))"),
        ("Expression: A*B**-1", "(/ A B)"),
        ("Expression: C⁻¹ + D^0", "(+ (/ 1 C) 1)"),
    ],
)
def test_power_notations_are_correct(completion: str, target: str) -> None:
    result = judge(completion, parse_sexpr(target), "arithmetic")
    assert result.verdict == "correct", result.error
    assert result.canonical == canonical_form(to_infix(parse_sexpr(target), ARITHMETIC), "arithmetic")


@pytest.mark.parametrize(
    ("completion", "target"),
    [
        ("Expression: 6 - F*(10*A + D**3 + G)", ISSUE_TARGET),
        ("Expression: 6 - F*(10*A + D^2 - G)", ISSUE_TARGET),
        ("Expression: A²", "(* A B)"),
        ("Expression: (A + B)^2", "(+ (* A A) (* B B))"),
        ("Expression: A^-1", "(* A 1)"),
    ],
)
def test_wrong_answers_with_powers_stay_wrong(completion: str, target: str) -> None:
    assert judge(completion, parse_sexpr(target), "arithmetic").verdict == "wrong"


@pytest.mark.parametrize(
    "completion",
    [
        "Expression: A^B",
        "Expression: x^2",
        "Expression: A^2.5",
        "Expression: sin(A)^2",
        "The answer is A^2.",
        "Expression: A**65",
        "Expression: A^2 # B",
        "Expression: __import__('os')^2",
    ],
)
def test_non_expressions_with_powers_are_parse_errors(completion: str) -> None:
    result = judge(completion, arith("A * A"), "arithmetic")
    assert result.verdict == "parse_error" and result.error


def test_power_answers_have_error_types() -> None:
    node = arith("D * D")
    assert error_type(judge("Expression: D^3", node, "arithmetic"), node, "arithmetic") == "operator_count"
    assert error_type(judge("Expression: C^2", node, "arithmetic"), node, "arithmetic") == "leaves"


def test_every_sympy_printing_of_suite_expressions_is_correct() -> None:
    """SymPy's printings of suite expressions (expanded, factored, ...) in ``**``, ``^`` and superscript powers."""
    superscripts = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
    rows = build_suite(SuiteConfig(k_min=4, k_max=6, d_min=3, d_max=4, max_skeletons=2, instances=1)).rows
    for row in rows:
        target = parse_sexpr(row["sexpr"])
        value = to_sympy(target)
        for printed in {sympy.sstr(form(value)) for form in (sympy.expand, sympy.factor, sympy.cancel)}:
            superscript = re.sub(r"\*\*(\d+)", lambda power: power.group(1).translate(superscripts), printed)
            for answer in (printed, printed.replace("**", "^"), superscript):
                assert judge(f"Expression: {answer}", target, "arithmetic").verdict == "correct", answer
