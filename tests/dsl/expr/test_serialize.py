"""Infix, S-expression and JSON-AST serializers and parsers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsl.expr.serialize import (
    ARITHMETIC,
    NEG,
    InfixSyntax,
    parse_infix,
    parse_json_ast,
    parse_sexpr,
    to_infix,
    to_json_ast,
    to_sexpr,
)
from dsl.expr.tree import Node, leaf, op

A, B, C, D = leaf("A"), leaf("B"), leaf("C"), leaf("D")

# A logic-like syntax local to the tests: multi-character symbols sharing prefixes, no implicit multiplication.
LOGICISH = InfixSyntax(
    symbols={"and": "&", "or": "|", "implies": "->", "iff": "<->"},
    precedence={"iff": 1, "implies": 2, "or": 3, "and": 4},
    associative=frozenset({"and", "or"}),
    aliases={"∧": "and", "∨": "or", "→": "implies", "⇒": "implies", "↔": "iff", "=>": "implies"},
)


def _trees(ops: list[str], with_neg: bool) -> st.SearchStrategy[Node]:
    leaves = st.one_of(st.sampled_from("ABCDEFGH").map(leaf), st.integers(0, 12).map(leaf))

    def extend(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
        binary = st.builds(lambda name, a, b: op(name, a, b), st.sampled_from(ops), children, children)
        return st.one_of(binary, children.map(lambda c: op(NEG, c))) if with_neg else binary

    return st.recursive(leaves, extend, max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(_trees(["+", "-", "*", "/"], with_neg=True))
def test_arithmetic_infix_round_trip(tree: Node) -> None:
    assert parse_infix(to_infix(tree, ARITHMETIC), ARITHMETIC) == tree


@settings(max_examples=300, deadline=None)
@given(_trees(["and", "or", "implies", "iff"], with_neg=False))
def test_multichar_symbol_round_trip(tree: Node) -> None:
    text = to_infix(tree, LOGICISH)
    assert parse_infix(text, LOGICISH) == tree
    assert parse_infix(text.replace(" ", ""), LOGICISH) == tree


@settings(max_examples=300, deadline=None)
@given(_trees(["+", "-", "*", "/", "weld", "red-gear"], with_neg=True))
def test_sexpr_and_json_round_trip(tree: Node) -> None:
    assert parse_sexpr(to_sexpr(tree)) == tree
    assert parse_json_ast(to_json_ast(tree)) == tree


@pytest.mark.parametrize(
    ("tree", "text"),
    [
        (op("-", A, op("-", B, C)), "A - (B - C)"),
        (op("-", op("-", A, B), C), "A - B - C"),
        (op("/", A, op("*", B, C)), "A / (B * C)"),
        (op("*", op("/", A, B), C), "A / B * C"),
        (op("+", A, op("*", B, leaf(3))), "A + B * 3"),
        (op("*", op("+", A, B), leaf(3)), "(A + B) * 3"),
        (op("+", A, op("+", B, C)), "A + (B + C)"),
        (op("+", A, op("-", B, C)), "A + (B - C)"),
        (op("-", A, op(NEG, B)), "A - -B"),
        (op("*", op(NEG, op("+", A, B)), C), "-(A + B) * C"),
    ],
)
def test_minimal_parentheses(tree: Node, text: str) -> None:
    assert to_infix(tree, ARITHMETIC) == text


def test_flatten_associative_drops_only_same_associative_op() -> None:
    right_sum = op("+", A, op("+", B, C))
    assert to_infix(right_sum, ARITHMETIC, flatten_associative=True) == "A + B + C"
    assert to_infix(op("*", A, op("*", B, C)), ARITHMETIC, flatten_associative=True) == "A * B * C"
    assert to_infix(op("-", A, op("-", B, C)), ARITHMETIC, flatten_associative=True) == "A - (B - C)"
    assert to_infix(op("+", A, op("-", B, C)), ARITHMETIC, flatten_associative=True) == "A + (B - C)"
    # the flat text re-parses left-nested
    assert parse_infix("A + B + C", ARITHMETIC) == op("+", op("+", A, B), C)


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("2A", op("*", leaf(2), A)),
        ("2(A+B)", op("*", leaf(2), op("+", A, B))),
        ("(A+B)(C)", op("*", op("+", A, B), C)),
        ("AB + C", op("+", op("*", A, B), C)),
        ("A + 2B", op("+", A, op("*", leaf(2), B))),
        ("[A + B] × 3", op("*", op("+", A, B), leaf(3))),
        ("A − B ÷ 2", op("-", A, op("/", B, leaf(2)))),
        ("A·B⋅C", op("*", op("*", A, B), C)),
        ("-3", op(NEG, leaf(3))),
        ("  ( ( A ) )  ", A),
        ("12 / 4", op("/", leaf(12), leaf(4))),
    ],
)
def test_parse_infix_accepts(text: str, tree: Node) -> None:
    assert parse_infix(text, ARITHMETIC) == tree


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("(A + B", "unbalanced"),
        ("A + B)", "unexpected ')'"),
        ("(A + B]", "does not close"),
        ("A +", "expected an operand"),
        ("A % B", "unexpected character '%'"),
        ("2 3", "unexpected '3'"),
        ("a + B", "unexpected character 'a'"),
        ("A = B", "unexpected character '='"),
    ],
)
def test_parse_infix_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_infix(text, ARITHMETIC)


def test_features_can_be_disabled() -> None:
    plain = InfixSyntax(symbols={"+": "+", "-": "-"}, precedence={"+": 1, "-": 1})
    with pytest.raises(ValueError):
        parse_infix("2A", plain)
    with pytest.raises(ValueError):
        parse_infix("-A", plain)
    assert parse_infix("A-B", plain) == op("-", A, B)


def test_longest_symbol_first() -> None:
    assert parse_infix("A<->B->C", LOGICISH) == op("iff", A, op("implies", B, C))
    assert parse_infix("A => B ∧ C", LOGICISH) == op("implies", A, op("and", B, C))
    with pytest.raises(ValueError, match="unexpected character '<'"):
        parse_infix("A <- B", LOGICISH)


def test_syntax_validation() -> None:
    with pytest.raises(ValueError, match="precedence"):
        InfixSyntax(symbols={"+": "+"}, precedence={})
    with pytest.raises(ValueError, match="aliases"):
        InfixSyntax(symbols={"+": "+"}, precedence={"+": 1}, aliases={"plus": "add"})
    with pytest.raises(ValueError, match="implicit_multiplication"):
        InfixSyntax(symbols={"+": "+"}, precedence={"+": 1}, implicit_multiplication="*")
    with pytest.raises(ValueError, match="distinct"):
        InfixSyntax(symbols={"+": "+", "add": "+"}, precedence={"+": 1, "add": 1})


def test_to_infix_rejects_unknown_ops() -> None:
    with pytest.raises(ValueError, match="no symbol"):
        to_infix(op("weld", A, B), ARITHMETIC)
    with pytest.raises(ValueError, match="binary"):
        to_infix(op("+", A, B, C), ARITHMETIC)


def test_sexpr_format_and_atoms() -> None:
    tree = op("+", A, op("*", B, leaf(3)))
    assert to_sexpr(tree) == "(+ A (* B 3))"
    assert parse_sexpr("(+ A (* B 3))") == tree
    assert parse_sexpr("  (mount  red-gear\n(glue x-1 -4)) ") == op(
        "mount", leaf("red-gear"), op("glue", leaf("x-1"), leaf(-4))
    )
    assert parse_sexpr("A") == A
    assert to_sexpr(op("?", op("?", leaf("?"), leaf("?")), leaf("?"))) == "(? (? ? ?) ?)"


@pytest.mark.parametrize("text", ["", "()", "(+ A B", "+ A B)", "(+ A B) C", "(+)", "((+ A B) C)", ")"])
def test_parse_sexpr_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_sexpr(text)


def test_sexpr_rejects_unwritable_atoms() -> None:
    with pytest.raises(ValueError):
        to_sexpr(leaf("two words"))
    with pytest.raises(ValueError):
        to_sexpr(leaf("12"))


def test_json_ast_format() -> None:
    text = to_json_ast(op("+", A, leaf(3)))
    assert text == '{"op": "+", "args": [{"var": "A"}, {"const": 3}]}'
    assert "\n" not in to_json_ast(op("-", op("+", A, B), leaf(4)))


@pytest.mark.parametrize(
    "obj",
    [
        [1, 2],
        {"var": ""},
        {"var": 3},
        {"const": "3"},
        {"const": True},
        {"op": "+", "args": []},
        {"op": "", "args": [{"var": "A"}]},
        {"op": "+"},
        {"var": "A", "const": 1},
        {"op": "+", "args": [{"var": "A"}, "B"]},
    ],
)
def test_parse_json_ast_rejects(obj: object) -> None:
    with pytest.raises(ValueError):
        parse_json_ast(json.dumps(obj))


def test_parse_json_ast_rejects_bad_json() -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_json_ast("{op: +}")
