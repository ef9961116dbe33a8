"""The logic domain: syntax round trip, aliases and precedence, equivalence oracle, non-degenerate instantiation."""

from __future__ import annotations

import itertools
import random

import pytest
from sympy import Symbol
from sympy.logic.boolalg import Xor
from sympy.logic.inference import satisfiable

from dsl.expr.logic import (
    LOGIC_NON_COMMUTATIVE,
    LOGIC_OPERATORS,
    LOGIC_SYNTAX,
    LogicConfig,
    instantiate_logic,
    is_degenerate,
    logic_equivalent,
    logic_to_sympy,
)
from dsl.expr.serialize import parse_infix, to_infix
from dsl.expr.skeletons import enumerate_skeletons, skeleton_of
from dsl.expr.tree import leaf, op

A, B, C, D = (leaf(v) for v in "ABCD")


def _formulas(count: int, seed: int = 0, depths: range = range(2, 6)) -> list:
    rng = random.Random(seed)
    skeletons = [s for d in depths for k in range(2, 9) for s in enumerate_skeletons(k, d)]
    return [(s, instantiate_logic(s, rng)) for s in (rng.choice(skeletons) for _ in range(count))]


def test_names_and_precedence_order() -> None:
    assert LOGIC_OPERATORS == ("and", "or", "xor", "implies", "iff")
    assert set(LOGIC_NON_COMMUTATIVE) == {"implies"}
    levels = LOGIC_SYNTAX.precedence
    assert levels["iff"] < levels["implies"] < levels["or"] < levels["xor"] < levels["and"]
    assert LOGIC_SYNTAX.associative == frozenset({"and", "or", "xor", "iff"})


def test_precedence_parses_loosest_last() -> None:
    tree = parse_infix("A & B | C -> D <-> A ^ B", LOGIC_SYNTAX)
    expected = op("iff", op("implies", op("or", op("and", A, B), C), D), op("xor", A, B))
    assert tree == expected
    assert parse_infix("A | B ^ C & D", LOGIC_SYNTAX) == op("or", A, op("xor", B, op("and", C, D)))


def test_aliases_read_as_the_connectives() -> None:
    canonical = parse_infix("(A & B) -> (C | D) <-> (A ^ B)", LOGIC_SYNTAX)
    assert parse_infix("(A ∧ B) → (C ∨ D) ↔ (A ⊕ B)", LOGIC_SYNTAX) == canonical
    assert parse_infix("(A && B) => (C || D) <=> (A ^ B)", LOGIC_SYNTAX) == canonical


def test_print_parse_round_trip() -> None:
    for _, formula in _formulas(300):
        text = to_infix(formula, LOGIC_SYNTAX)
        assert parse_infix(text, LOGIC_SYNTAX) == formula, text
        assert logic_equivalent(
            parse_infix(to_infix(formula, LOGIC_SYNTAX, flatten_associative=True), LOGIC_SYNTAX), formula
        )


def test_implication_keeps_its_argument_order_in_print() -> None:
    right_nested = op("implies", A, op("implies", B, C))
    assert to_infix(right_nested, LOGIC_SYNTAX) == "A -> (B -> C)"
    assert to_infix(op("implies", op("implies", A, B), C), LOGIC_SYNTAX) == "A -> B -> C"


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("A & B", "B & A"),
        ("A -> B", "(A | B) <-> B"),  # A -> B is ~A | B; here without negation
        ("A -> B", "(A & B) <-> A"),
        ("A ^ B", "(A | B) ^ (A & B)"),
        ("A <-> B", "(A -> B) & (B -> A)"),
        ("A & (B | C)", "A & B | A & C"),
    ],
)
def test_true_identities(left: str, right: str) -> None:
    assert logic_equivalent(left, right)


@pytest.mark.parametrize(
    ("left", "right"),
    [("A -> B", "B -> A"), ("A ^ B", "A | B"), ("A <-> B", "A & B"), ("A -> (B -> C)", "(A -> B) -> C")],
)
def test_non_identities(left: str, right: str) -> None:
    assert not logic_equivalent(left, right)


def test_truth_tables_agree_with_the_sat_solver() -> None:
    formulas = [formula for _, formula in _formulas(30, seed=3, depths=range(2, 4))]
    pairs = list(itertools.pairwise(formulas))
    pairs += [(f, op("and", f, op("or", f, leaf("Z")))) for f in formulas[:10]]  # absorption: equivalent
    verdicts = set()
    for left, right in pairs:
        expected = not satisfiable(Xor(logic_to_sympy(left), logic_to_sympy(right)))
        assert logic_equivalent(left, right) == expected
        verdicts.add(expected)
    assert verdicts == {True, False}


def test_many_variables_use_the_sat_solver() -> None:
    names = [chr(ord("A") + i) for i in range(22)]
    conjunction = leaf(names[0])
    disjunction = leaf(names[0])
    for name in names[1:]:
        conjunction = op("and", conjunction, leaf(name))
        disjunction = op("or", disjunction, leaf(name))
    reversed_conjunction = leaf(names[-1])
    for name in reversed(names[:-1]):
        reversed_conjunction = op("and", reversed_conjunction, leaf(name))
    assert logic_equivalent(conjunction, reversed_conjunction)
    assert not logic_equivalent(conjunction, disjunction)


def test_sympy_form_follows_argument_order() -> None:
    implication = logic_to_sympy(op("implies", A, B))
    a, b = Symbol("A"), Symbol("B")
    assert bool(implication.subs({a: True, b: False})) is False
    assert bool(implication.subs({a: False, b: True})) is True
    assert bool(logic_to_sympy(op("xor", A, B)).subs({a: True, b: True})) is False
    with pytest.raises(ValueError):
        logic_to_sympy(op("nand", A, B))
    with pytest.raises(ValueError):
        logic_to_sympy(leaf(3))


def test_unparsable_string_raises() -> None:
    with pytest.raises(ValueError):
        logic_equivalent("A & & B", "A")


def test_instantiation_is_non_degenerate_and_keeps_the_skeleton() -> None:
    operators_seen = set()
    for skeleton, formula in _formulas(400, seed=1):
        assert skeleton_of(formula) == skeleton
        assert not is_degenerate(formula)
        assert all(isinstance(value, str) and value in "ABCDEFGH" for value in formula.leaves())
        operators_seen.update(node.op for node, _ in formula.walk() if not node.is_leaf)
    assert operators_seen == set(LOGIC_OPERATORS)


def test_degenerate_detection() -> None:
    assert is_degenerate(op("or", op("and", A, A), B))
    assert is_degenerate(op("implies", C, C))
    assert not is_degenerate(op("and", A, op("or", A, B)))


def test_instantiation_is_deterministic_and_respects_config() -> None:
    skeleton = enumerate_skeletons(4, 3)[0]
    config = LogicConfig(operators=("and", "implies"), variables="PQ")
    first = instantiate_logic(skeleton, random.Random(7), config)
    assert first == instantiate_logic(skeleton, random.Random(7), config)
    assert {n.op for n, _ in first.walk() if not n.is_leaf} <= {"and", "implies"}
    assert set(first.leaves()) <= {"P", "Q"}


@pytest.mark.parametrize(
    ("kwargs", "field_name"),
    [
        ({"operators": ("nand",)}, "operators"),
        ({"variables": "A"}, "variables"),
        ({"variables": "ab"}, "variables"),
        ({"max_tries": 0}, "max_tries"),
    ],
)
def test_config_validation(kwargs: dict, field_name: str) -> None:
    with pytest.raises(ValueError, match=field_name):
        LogicConfig(**kwargs)
