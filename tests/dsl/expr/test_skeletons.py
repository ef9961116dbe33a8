"""Skeleton enumeration and counting."""

from __future__ import annotations

import math

import pytest

from dsl.expr.serialize import parse_sexpr
from dsl.expr.skeletons import count_skeletons, enumerate_skeletons, is_feasible, skeleton_id, skeleton_of
from dsl.expr.tree import HOLE, leaf, op


def _catalan(n: int) -> int:
    return math.comb(2 * n, n) // (n + 1)


@pytest.mark.parametrize(
    ("k", "d", "expected"),
    [
        (1, 1, {"(? ? ?)"}),
        (2, 2, {"(? (? ? ?) ?)", "(? ? (? ? ?))"}),
        (3, 2, {"(? (? ? ?) (? ? ?))"}),
        (
            3,
            3,
            {"(? (? (? ? ?) ?) ?)", "(? (? ? (? ? ?)) ?)", "(? ? (? (? ? ?) ?))", "(? ? (? ? (? ? ?)))"},
        ),
    ],
)
def test_hand_enumeration(k: int, d: int, expected: set[str]) -> None:
    skeletons = enumerate_skeletons(k, d)
    ids = [skeleton_id(s) for s in skeletons]
    assert set(ids) == expected
    assert len(ids) == len(expected) == count_skeletons(k, d)


@pytest.mark.parametrize("k", range(1, 9))
def test_total_over_depths_is_catalan(k: int) -> None:
    by_depth = [enumerate_skeletons(k, d) for d in range(0, k + 2)]
    assert sum(len(trees) for trees in by_depth) == _catalan(k)
    assert sum(count_skeletons(k, d) for d in range(0, k + 2)) == _catalan(k)
    ids = [skeleton_id(tree) for trees in by_depth for tree in trees]
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize(("k", "d"), [(k, d) for k in range(1, 9) for d in range(1, 9)])
def test_exact_shape_and_count(k: int, d: int) -> None:
    skeletons = enumerate_skeletons(k, d)
    assert len(skeletons) == count_skeletons(k, d)
    assert all(s.n_ops == k and s.depth == d for s in skeletons)
    assert all(len(n.children) == 2 and n.op == HOLE for s in skeletons for n, _ in s.walk() if not n.is_leaf)
    assert all(s.leaves() == [HOLE] * (k + 1) for s in skeletons)
    assert (len(skeletons) > 0) == is_feasible(k, d) == (math.ceil(math.log2(k + 1)) <= d <= k)


def test_infeasible_cells() -> None:
    assert count_skeletons(8, 2) == 0 and enumerate_skeletons(8, 2) == []
    assert count_skeletons(2, 3) == 0 and enumerate_skeletons(2, 3) == []
    assert count_skeletons(7, 3) == 1  # the perfect tree


def test_deterministic_order() -> None:
    assert [skeleton_id(s) for s in enumerate_skeletons(6, 4)] == [skeleton_id(s) for s in enumerate_skeletons(6, 4)]
    assert [skeleton_id(s) for s in enumerate_skeletons(2, 2)] == ["(? ? (? ? ?))", "(? (? ? ?) ?)"]


def test_count_beyond_enumeration() -> None:
    # depth-unbounded DP equals Catalan for sizes too big to enumerate quickly
    assert sum(count_skeletons(14, d) for d in range(15)) == _catalan(14)
    assert count_skeletons(14, 14) == 2**13


def test_skeleton_of_and_id() -> None:
    tree = op("-", op("+", leaf("A"), leaf(3)), leaf("B"))
    assert skeleton_of(tree) == op(HOLE, op(HOLE, leaf(HOLE), leaf(HOLE)), leaf(HOLE))
    assert skeleton_id(tree) == "(? (? ? ?) ?)"
    assert parse_sexpr(skeleton_id(tree)) == skeleton_of(tree)


def test_negative_arguments_rejected() -> None:
    with pytest.raises(ValueError, match="k must be"):
        count_skeletons(-1, 2)
    with pytest.raises(ValueError, match="d must be"):
        enumerate_skeletons(2, -1)
