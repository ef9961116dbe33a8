"""Structural features of expression trees."""

from __future__ import annotations

import pytest

from dsl.expr.arithmetic import ARITHMETIC_NON_COMMUTATIVE, ARITHMETIC_OPERATORS
from dsl.expr.features import (
    center_of_mass,
    deepest_noncommutative_level,
    linearization_complexity,
    op_feature_name,
    structural_features,
    variable_reuse,
)
from dsl.expr.serialize import ARITHMETIC, parse_infix
from dsl.expr.skeletons import enumerate_skeletons
from dsl.expr.tree import HOLE, Node, leaf, op


def _left_caterpillar(d: int) -> Node:
    node = leaf(HOLE)
    for _ in range(d):
        node = op(HOLE, node, leaf(HOLE))
    return node


def _right_caterpillar(d: int) -> Node:
    node = leaf(HOLE)
    for _ in range(d):
        node = op(HOLE, leaf(HOLE), node)
    return node


def _p(text: str) -> Node:
    return parse_infix(text, ARITHMETIC)


@pytest.mark.parametrize("d", range(2, 7))
def test_caterpillars(d: int) -> None:
    left, right = _left_caterpillar(d), _right_caterpillar(d)
    assert left.depth == right.depth == d
    assert linearization_complexity(left) == 0
    assert linearization_complexity(right) == d - 1
    # left caterpillar: internal nodes at offsets 0, -1, ..., -(d-1): mean -(d-1)/2, divided by the depth
    assert center_of_mass(left) == pytest.approx(-(d - 1) / 2 / d)
    assert center_of_mass(right) == pytest.approx((d - 1) / 2 / d)


def test_balanced_and_small_trees() -> None:
    perfect = enumerate_skeletons(3, 2)[0]
    assert linearization_complexity(perfect) == 1  # the root's right child is internal
    assert center_of_mass(perfect) == 0.0
    assert center_of_mass(leaf("A")) == 0.0 and linearization_complexity(leaf("A")) == 0
    assert center_of_mass(_p("A + B")) == 0.0


def test_center_of_mass_nary() -> None:
    # first child -1, middle 0, last +1; the unary child is neither
    tree = op("layer", op("glue", leaf("a"), leaf("b")), op("weld", leaf("c"), leaf("d")), leaf("e"))
    assert center_of_mass(tree) == pytest.approx((0 - 1 + 0) / 3 / 2)
    unary = op("neg", op("+", leaf("A"), leaf("B")))
    assert center_of_mass(unary) == 0.0


def test_deepest_noncommutative_level() -> None:
    nc = ARITHMETIC_NON_COMMUTATIVE
    assert deepest_noncommutative_level(_p("A + B * C"), nc) == 0
    assert deepest_noncommutative_level(_p("A - B * C"), nc) == 1
    assert deepest_noncommutative_level(_p("A * (B + C / D)"), nc) == 3
    assert deepest_noncommutative_level(_p("(A - B) + C / (D * E)"), nc) == 2


def test_variable_counts_and_full_feature_dict() -> None:
    # ((A - 3) * (A + B)) / (A * 7): internal offsets / 0, * -1, - -2, + 0, * +1; right children internal at / and *
    tree = _p("(A - 3) * (A + B) / (A * 7)")
    assert variable_reuse(tree) == 2
    features = structural_features(tree, ARITHMETIC_OPERATORS, ARITHMETIC_NON_COMMUTATIVE)
    assert features == {
        "k": 5,
        "d": 3,
        "l_T": 2,
        "center_of_mass": pytest.approx((0 - 1 - 2 + 0 + 1) / 5 / 3),
        "deepest_noncomm_level": 3,
        "variable_reuse": 2,
        "unique_variables": 2,
        "n_constants": 2,
        "root_op": "/",
        "n_add": 1,
        "n_sub": 1,
        "n_mul": 2,
        "n_div": 1,
    }


def test_op_feature_names() -> None:
    assert [op_feature_name(name) for name in ("+", "-", "*", "/", "and", "implies", "weld")] == [
        "n_add",
        "n_sub",
        "n_mul",
        "n_div",
        "n_and",
        "n_implies",
        "n_weld",
    ]
    features = structural_features(op("and", leaf("P"), leaf("Q")), ("and", "or"), frozenset({"implies"}))
    assert features["n_and"] == 1 and features["n_or"] == 0 and features["deepest_noncomm_level"] == 0
