"""Binary-tree skeletons with exactly ``k`` internal nodes and depth exactly ``d`` (NL paper §2.1, App. B).

A skeleton is a tree whose internal nodes have op ``"?"`` and whose leaves hold ``"?"``: the topology an expression is
instantiated from. A pair ``(k, d)`` is feasible iff ``ceil(log2(k + 1)) <= d <= k`` (k >= 1).
"""

from __future__ import annotations

import math
from functools import cache

from dsl.expr.serialize import to_sexpr
from dsl.expr.tree import HOLE, Node, leaf, op

_HOLE_LEAF = leaf(HOLE)


def _check(k: int, d: int) -> None:
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if d < 0:
        raise ValueError(f"d must be >= 0, got {d}")


def is_feasible(k: int, d: int) -> bool:
    """Whether some binary tree has ``k`` internal nodes and depth ``d``."""
    _check(k, d)
    if k == 0:
        return d == 0
    return math.ceil(math.log2(k + 1)) <= d <= k


@cache
def _at_most(k: int, max_depth: int) -> tuple[Node, ...]:
    """All skeletons with ``k`` internal nodes and depth <= ``max_depth``, in a fixed order."""
    if k == 0:
        return (_HOLE_LEAF,)
    if max_depth == 0:
        return ()
    trees: list[Node] = []
    for left_k in range(k):
        lefts = _at_most(left_k, max_depth - 1)
        rights = _at_most(k - 1 - left_k, max_depth - 1)
        trees.extend(op(HOLE, left, right) for left in lefts for right in rights)
    return tuple(trees)


@cache
def _exactly(k: int, d: int) -> tuple[Node, ...]:
    return tuple(tree for tree in _at_most(k, d) if tree.depth == d)


def enumerate_skeletons(k: int, d: int) -> list[Node]:
    """Every skeleton with exactly ``k`` internal nodes and depth exactly ``d`` (deterministic order; [] if none)."""
    _check(k, d)
    if not is_feasible(k, d):
        return []
    return list(_exactly(k, d))


@cache
def _count_at_most(k: int, max_depth: int) -> int:
    if k == 0:
        return 1
    if max_depth == 0:
        return 0
    return sum(_count_at_most(i, max_depth - 1) * _count_at_most(k - 1 - i, max_depth - 1) for i in range(k))


def count_skeletons(k: int, d: int) -> int:
    """Number of skeletons with exactly ``k`` internal nodes and depth ``d``, by dynamic programming."""
    _check(k, d)
    if d == 0:
        return 1 if k == 0 else 0
    return _count_at_most(k, d) - _count_at_most(k, d - 1)


def skeleton_of(node: Node) -> Node:
    """The topology of any tree: every op and leaf replaced by ``"?"``."""
    if node.is_leaf:
        return _HOLE_LEAF
    return op(HOLE, *(skeleton_of(child) for child in node.children))


def skeleton_id(skeleton: Node) -> str:
    """Compact canonical string of a skeleton (or of any tree's topology): ``(? (? ? ?) ?)``."""
    return to_sexpr(skeleton_of(skeleton))


__all__ = ["count_skeletons", "enumerate_skeletons", "is_feasible", "skeleton_id", "skeleton_of"]
