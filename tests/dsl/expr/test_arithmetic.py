"""Arithmetic instantiation, degeneracy rejection and the sympy conversion."""

from __future__ import annotations

import random

import pytest
import sympy

from dsl.expr.arithmetic import ArithmeticConfig, degenerate_patterns, instantiate, is_degenerate, to_sympy
from dsl.expr.serialize import ARITHMETIC, NEG, parse_infix, to_sexpr
from dsl.expr.skeletons import enumerate_skeletons, skeleton_of
from dsl.expr.tree import leaf, op

A, B = leaf("A"), leaf("B")


def _p(text: str):
    return parse_infix(text, ARITHMETIC)


@pytest.mark.parametrize(
    ("text", "patterns"),
    [
        ("A - A", ["X - X"]),
        ("3 / 3", ["X / X"]),
        ("(A + B) * 1", ["X * 1"]),
        ("1 * (A - B)", ["1 * X"]),
        ("(A * B) / 1", ["X / 1"]),
        ("C + (B - B) * 2", ["X - X"]),
        ("1 * 1", ["X * 1", "1 * X"]),
        ("(A - A) / 1", ["X / 1", "X - X"]),
        ("A - 3 * 1 + 2", ["X * 1"]),
    ],
)
def test_degenerate_patterns(text: str, patterns: list[str]) -> None:
    assert degenerate_patterns(_p(text)) == patterns
    assert is_degenerate(_p(text))


@pytest.mark.parametrize(
    "text",
    ["A + A", "A * A", "3 - 4", "A / B", "1 / A", "1 - A", "A + 1", "(A + B) - (A + B)", "2 * 3"],
)
def test_not_degenerate(text: str) -> None:
    # same-leaf patterns are about leaves only; structural repeats like (A + B) - (A + B) are kept (as in the paper)
    assert not is_degenerate(_p(text))


def test_zero_denominator_only_when_asked() -> None:
    tree = _p("A / (6 - 2 * 3)")
    assert not is_degenerate(tree)
    assert degenerate_patterns(tree, zero_division=True) == ["X / 0"]
    assert not is_degenerate(_p("A / (6 - 2 * 4)"), zero_division=True)


def test_instances_are_never_degenerate_and_keep_topology() -> None:
    config = ArithmeticConfig()
    rng = random.Random(7)
    skeletons = [s for d in (2, 3, 4) for s in enumerate_skeletons(4, d)] + enumerate_skeletons(2, 2)
    for i in range(2000):
        skeleton = skeletons[i % len(skeletons)]
        node = instantiate(skeleton, rng, config)
        assert not is_degenerate(node, zero_division=True)
        assert skeleton_of(node) == skeleton
        assert all(n.op in config.operators for n, _ in node.walk() if not n.is_leaf)
        for value in node.leaves():
            assert value in config.variables if isinstance(value, str) else 1 <= value <= 10
        assert to_sympy(node).is_finite is not False


def test_leaf_type_and_operator_frequencies() -> None:
    rng = random.Random(3)
    skeleton = enumerate_skeletons(7, 3)[0]
    variables = constants = 0
    op_counts = {name: 0 for name in "+-*/"}
    for _ in range(2000):
        node = instantiate(skeleton, rng)
        leaves = node.leaves()
        variables += sum(isinstance(v, str) for v in leaves)
        constants += sum(isinstance(v, int) for v in leaves)
        for n, _ in node.walk():
            if not n.is_leaf:
                op_counts[n.op] += 1
    share = variables / (variables + constants)
    assert 0.68 < share < 0.74  # rejection of X*1 etc. removes a few constant leaves, so slightly above 0.7
    total = sum(op_counts.values())
    assert all(0.2 < count / total < 0.3 for count in op_counts.values())


def test_seeded_reproducibility() -> None:
    skeleton = enumerate_skeletons(5, 4)[3]
    first = [to_sexpr(instantiate(skeleton, random.Random(s))) for s in range(20)]
    second = [to_sexpr(instantiate(skeleton, random.Random(s))) for s in range(20)]
    assert first == second
    assert len(set(first)) > 15


def test_config_knobs() -> None:
    skeleton = enumerate_skeletons(3, 2)[0]
    rng = random.Random(0)
    only_vars = ArithmeticConfig(operators=("+",), variables="XY", variable_prob=1.0)
    node = instantiate(skeleton, rng, only_vars)
    assert set(node.leaves()) <= {"X", "Y"} and {n.op for n, _ in node.walk() if not n.is_leaf} == {"+"}
    only_consts = ArithmeticConfig(operators=("-",), variable_prob=0.0, min_constant=5, max_constant=5)
    with pytest.raises(ValueError, match="max_tries"):
        instantiate(enumerate_skeletons(1, 1)[0], rng, only_consts)  # 5 - 5 is always degenerate


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"operators": ("+", "^")}, "operators"),
        ({"operators": ()}, "operators"),
        ({"variables": "AAB"}, "variables"),
        ({"variables": "ab"}, "variables"),
        ({"variable_prob": 1.5}, "variable_prob"),
        ({"min_constant": 0}, "min_constant"),
        ({"min_constant": 4, "max_constant": 3}, "max_constant"),
        ({"max_tries": 0}, "max_tries"),
    ],
)
def test_config_validation(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        ArithmeticConfig(**kwargs)


def test_to_sympy() -> None:
    a, b = sympy.symbols("A B")
    assert to_sympy(_p("A / (B * 2)")) == a / (2 * b)
    assert to_sympy(_p("3 / 4 + 1")) == sympy.Rational(7, 4)
    assert to_sympy(_p("-(A - B)")) == b - a
    assert to_sympy(op(NEG, leaf(3))) == -3
    assert sympy.simplify(to_sympy(_p("(A + B) * 2")) - to_sympy(_p("2B + 2A"))) == 0
    assert sympy.simplify(to_sympy(_p("A - B - 1")) - to_sympy(_p("A - (B - 1)"))) != 0
    with pytest.raises(ValueError, match="unknown"):
        to_sympy(op("weld", A, B))
