"""Arithmetic instantiation of skeletons and the conversion to sympy (NL paper §2.1).

Internal nodes get operators uniformly from ``+ - * /``; each leaf is a variable from ``A..H`` with probability 0.7,
else an integer constant uniform in ``[1, 10]``. Locally degenerate instances are rejected and redrawn whole: the
same leaf on both sides of ``-`` or ``/`` (``X - X``, ``X / X``) and multiplicative identities (``X * 1``, ``1 * X``,
``X / 1``). Beyond the paper, a denominator that sympy evaluates to zero (``A / (3 - 3 * 1)``-like constant
subtrees) is also rejected by default, so every suite expression has a finite value.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import sympy

from dsl.expr.serialize import NEG
from dsl.expr.tree import Node, leaf, op

ARITHMETIC_OPERATORS = ("+", "-", "*", "/")
ARITHMETIC_NON_COMMUTATIVE = frozenset({"-", "/"})


@dataclass
class ArithmeticConfig:
    """Operator set, variable alphabet and leaf-type probabilities of arithmetic instantiation."""

    operators: tuple[str, ...] = field(default=ARITHMETIC_OPERATORS, metadata={"help": "operators for internal nodes"})
    variables: str = field(default="ABCDEFGH", metadata={"help": "variable alphabet (one letter per variable)"})
    variable_prob: float = field(default=0.7, metadata={"help": "probability that a leaf is a variable"})
    min_constant: int = field(default=1, metadata={"help": "smallest integer constant"})
    max_constant: int = field(default=10, metadata={"help": "largest integer constant"})
    max_tries: int = field(default=1000, metadata={"help": "redraws before giving up on a non-degenerate instance"})
    reject_zero_division: bool = field(
        default=True, metadata={"help": "also reject denominators that evaluate to zero (not in the paper)"}
    )

    def __post_init__(self) -> None:
        self.operators = tuple(self.operators)
        if not self.operators or any(name not in ARITHMETIC_OPERATORS for name in self.operators):
            raise ValueError(f"operators must be a non-empty subset of {ARITHMETIC_OPERATORS}, got {self.operators}")
        if not self.variables or len(set(self.variables)) != len(self.variables):
            raise ValueError(f"variables must be distinct letters, got {self.variables!r}")
        if not all(v.isalpha() and v.isupper() for v in self.variables):
            raise ValueError(f"variables must be capital letters, got {self.variables!r}")
        if not 0.0 <= self.variable_prob <= 1.0:
            raise ValueError(f"variable_prob must be in [0, 1], got {self.variable_prob}")
        if self.min_constant < 1:
            raise ValueError(f"min_constant must be >= 1 (non-negative, no zero divisors), got {self.min_constant}")
        if self.max_constant < self.min_constant:
            raise ValueError(f"max_constant must be >= min_constant, got {self.max_constant} < {self.min_constant}")
        if self.max_tries < 1:
            raise ValueError(f"max_tries must be >= 1, got {self.max_tries}")


def _draw(skeleton: Node, rng: random.Random, config: ArithmeticConfig) -> Node:
    if skeleton.is_leaf:
        if rng.random() < config.variable_prob:
            return leaf(rng.choice(config.variables))
        return leaf(rng.randint(config.min_constant, config.max_constant))
    if len(skeleton.children) != 2:
        raise ValueError(f"arithmetic skeletons are binary; found a node with {len(skeleton.children)} children")
    name = rng.choice(config.operators)
    return op(name, *(_draw(child, rng, config) for child in skeleton.children))


def _is_one(node: Node) -> bool:
    return node.is_leaf and isinstance(node.value, int) and node.value == 1


def _same_leaf(a: Node, b: Node) -> bool:
    return a.is_leaf and b.is_leaf and type(a.value) is type(b.value) and a.value == b.value


def degenerate_patterns(node: Node, *, zero_division: bool = False) -> list[str]:
    """The degenerate patterns found, one entry per occurrence in pre-order.

    Entries are ``"X - X"``, ``"X / X"``, ``"X * 1"``, ``"1 * X"``, ``"X / 1"`` and, with ``zero_division``,
    ``"X / 0"`` (a denominator that sympy evaluates to zero).
    """
    found: list[str] = []
    for sub, _ in node.walk():
        if sub.is_leaf or len(sub.children) != 2:
            continue
        left, right = sub.children
        if sub.op in ("-", "/") and _same_leaf(left, right):
            found.append(f"X {sub.op} X")
        if sub.op == "*" and _is_one(right):
            found.append("X * 1")
        if sub.op == "*" and _is_one(left):
            found.append("1 * X")
        if sub.op == "/" and _is_one(right):
            found.append("X / 1")
        if zero_division and sub.op == "/" and to_sympy(right) == 0:
            found.append("X / 0")
    return found


def is_degenerate(node: Node, *, zero_division: bool = False) -> bool:
    """Whether the tree contains any degenerate pattern (see :func:`degenerate_patterns`)."""
    return bool(degenerate_patterns(node, zero_division=zero_division))


def instantiate(skeleton: Node, rng: random.Random, config: ArithmeticConfig | None = None) -> Node:
    """An arithmetic expression with the skeleton's topology; whole instances are redrawn while degenerate."""
    config = config or ArithmeticConfig()
    for _ in range(config.max_tries):
        node = _draw(skeleton, rng, config)
        if not is_degenerate(node, zero_division=config.reject_zero_division):
            return node
    raise ValueError(f"no non-degenerate instance after max_tries={config.max_tries} draws")


def to_sympy(node: Node) -> Any:
    """The sympy expression of an arithmetic tree: Symbols, Integers, true division (Rationals), ``neg``."""
    if node.is_leaf:
        if isinstance(node.value, int):
            return sympy.Integer(node.value)
        return sympy.Symbol(str(node.value))
    args = [to_sympy(child) for child in node.children]
    if node.op == NEG and len(args) == 1:
        return -args[0]
    if len(args) != 2:
        raise ValueError(f"op {node.op!r} with {len(args)} operands is not arithmetic")
    left, right = args
    if node.op == "+":
        return left + right
    if node.op == "-":
        return left - right
    if node.op == "*":
        return left * right
    if node.op == "/":
        return left / right
    raise ValueError(f"unknown arithmetic op {node.op!r}")


__all__ = [
    "ARITHMETIC_NON_COMMUTATIVE",
    "ARITHMETIC_OPERATORS",
    "ArithmeticConfig",
    "degenerate_patterns",
    "instantiate",
    "is_degenerate",
    "to_sympy",
]
