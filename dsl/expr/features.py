"""Structural features of an expression tree (NL paper §3.3, App. G), generic over domains.

``l_T`` (linearization complexity) counts internal nodes whose right (last) child is internal: 0 for a
left-caterpillar, ``d - 1`` for a right-caterpillar of depth ``d``. ``center_of_mass`` is negative for left-heavy
trees and positive for right-heavy ones.
"""

from __future__ import annotations

from collections import Counter

from dsl.expr.tree import Node

OP_FEATURE_NAMES = {"+": "add", "-": "sub", "*": "mul", "/": "div"}


def linearization_complexity(node: Node) -> int:
    """l(T): internal nodes whose right (last) child is itself internal, counted tree-wide."""
    return sum(1 for sub, _ in node.walk() if not sub.is_leaf and not sub.children[-1].is_leaf)


def _branch_sign(index: int, arity: int) -> int:
    """-1 for the first child, +1 for the last, 0 for middle children and the only child of a unary op."""
    if arity == 1:
        return 0
    if index == 0:
        return -1
    return 1 if index == arity - 1 else 0


def center_of_mass(node: Node) -> float:
    """Mean over internal nodes of (right moves - left moves on the root path) / max(depth, 1).

    In [-1, 1]: negative means the operators sit in left subtrees (left-heavy), positive right-heavy; 0.0 for a leaf.
    """
    offsets: list[int] = []
    stack: list[tuple[Node, int]] = [(node, 0)]
    while stack:
        sub, offset = stack.pop()
        if sub.is_leaf:
            continue
        offsets.append(offset)
        arity = len(sub.children)
        stack.extend((child, offset + _branch_sign(i, arity)) for i, child in enumerate(sub.children))
    if not offsets:
        return 0.0
    return sum(offsets) / len(offsets) / max(node.depth, 1)


def deepest_noncommutative_level(node: Node, non_commutative: frozenset[str]) -> int:
    """Deepest level (root = 1) of an operator in ``non_commutative``; 0 if the tree has none."""
    levels = [level + 1 for sub, level in node.walk() if not sub.is_leaf and sub.op in non_commutative]
    return max(levels, default=0)


def unique_variables(node: Node) -> int:
    """Distinct variables."""
    return len(set(node.variables()))


def variable_reuse(node: Node) -> int:
    """Variable leaves minus distinct variables (0 when no variable repeats)."""
    return len(node.variables()) - unique_variables(node)


def n_constants(node: Node) -> int:
    """Integer-constant leaves."""
    return sum(1 for value in node.leaves() if isinstance(value, int))


def root_op(node: Node) -> str:
    """The root operator ('' for a leaf)."""
    return node.op or ""


def operator_counts(node: Node, operators: tuple[str, ...]) -> dict[str, int]:
    """Occurrences of each listed operator (others are not counted)."""
    counts = Counter(sub.op for sub, _ in node.walk() if not sub.is_leaf)
    return {name: counts.get(name, 0) for name in operators}


def op_feature_name(name: str) -> str:
    """Column name of an operator count: ``n_add`` for ``+``, ``n_and`` for ``and``."""
    return "n_" + OP_FEATURE_NAMES.get(name, name)


def structural_features(
    node: Node, operators: tuple[str, ...], non_commutative: frozenset[str]
) -> dict[str, int | float | str]:
    """Every structural feature of a tree, keyed as in the suite and the attribution table."""
    features: dict[str, int | float | str] = {
        "k": node.n_ops,
        "d": node.depth,
        "l_T": linearization_complexity(node),
        "center_of_mass": center_of_mass(node),
        "deepest_noncomm_level": deepest_noncommutative_level(node, non_commutative),
        "variable_reuse": variable_reuse(node),
        "unique_variables": unique_variables(node),
        "n_constants": n_constants(node),
        "root_op": root_op(node),
    }
    for name, count in operator_counts(node, operators).items():
        features[op_feature_name(name)] = count
    return features


__all__ = [
    "OP_FEATURE_NAMES",
    "center_of_mass",
    "deepest_noncommutative_level",
    "linearization_complexity",
    "n_constants",
    "op_feature_name",
    "operator_counts",
    "root_op",
    "structural_features",
    "unique_variables",
    "variable_reuse",
]
