"""Propositional logic domain (NL paper App. R): five binary connectives, variable leaves, equivalence as the oracle.

The connectives are all binary (``and``, ``or``, ``xor``, ``implies``, ``iff``) so the arithmetic skeletons are reused
unchanged. Infix syntax: ``&  |  ^  ->  <->`` with precedence, loosest to tightest, iff (1) < implies (2) < or (3)
< xor (4) < and (5), so ``A & B | C -> D`` reads ``((A & B) | C) -> D``. Like every syntax in
:mod:`dsl.expr.serialize` the parser is left-associative (``A -> B -> C`` is ``(A -> B) -> C``); the printer puts
parentheses around a right operand of equal precedence, so printed formulas never depend on that choice. Two formulas
are equivalent when their exclusive or is unsatisfiable: compared by truth tables up to 20 variables, else by sympy's
SAT solver.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from sympy import Symbol
from sympy.logic.boolalg import And, Equivalent, Implies, Or, Xor
from sympy.logic.inference import satisfiable

from dsl.expr.serialize import InfixSyntax, parse_infix, to_sexpr
from dsl.expr.tree import Node, leaf, op

LOGIC_OPERATORS = ("and", "or", "xor", "implies", "iff")
LOGIC_NON_COMMUTATIVE = frozenset({"implies"})
LOGIC_SYNTAX = InfixSyntax(
    symbols={"and": "&", "or": "|", "xor": "^", "implies": "->", "iff": "<->"},
    precedence={"iff": 1, "implies": 2, "or": 3, "xor": 4, "and": 5},
    associative=frozenset({"and", "or", "xor", "iff"}),
    aliases={
        "∧": "and",
        "&&": "and",
        "∨": "or",
        "||": "or",
        "⊕": "xor",
        "→": "implies",
        "=>": "implies",
        "↔": "iff",
        "<=>": "iff",
    },
    implicit_multiplication=None,
    variable_pattern="[A-Z]",
    unary_minus=False,
)
_SYMPY_OPS: dict[str, Any] = {"and": And, "or": Or, "xor": Xor, "implies": Implies, "iff": Equivalent}


@dataclass
class LogicConfig:
    """Connectives and variable alphabet of logic instantiation."""

    operators: tuple[str, ...] = field(default=LOGIC_OPERATORS, metadata={"help": "connectives for internal nodes"})
    variables: str = field(default="ABCDEFGH", metadata={"help": "proposition alphabet (one capital letter each)"})
    max_tries: int = field(default=1000, metadata={"help": "redraws before giving up on a non-degenerate instance"})

    def __post_init__(self) -> None:
        self.operators = tuple(self.operators)
        if not self.operators or any(name not in LOGIC_OPERATORS for name in self.operators):
            raise ValueError(f"operators must be a non-empty subset of {LOGIC_OPERATORS}, got {self.operators}")
        if len(self.variables) < 2 or len(set(self.variables)) != len(self.variables):
            raise ValueError(f"variables must be at least two distinct letters, got {self.variables!r}")
        if not all(v.isalpha() and v.isupper() and v.isascii() for v in self.variables):
            raise ValueError(f"variables must be capital letters A..Z, got {self.variables!r}")
        if self.max_tries < 1:
            raise ValueError(f"max_tries must be >= 1, got {self.max_tries}")


def _draw(skeleton: Node, rng: random.Random, config: LogicConfig) -> Node:
    if skeleton.is_leaf:
        return leaf(rng.choice(config.variables))
    if len(skeleton.children) != 2:
        raise ValueError(f"logic skeletons are binary; found a node with {len(skeleton.children)} children")
    name = rng.choice(config.operators)
    return op(name, *(_draw(child, rng, config) for child in skeleton.children))


def is_degenerate(node: Node) -> bool:
    """True when some connective has the same variable leaf on both sides (``X & X``, ``X -> X``)."""
    return any(
        not sub.is_leaf
        and len(sub.children) == 2
        and all(c.is_leaf for c in sub.children)
        and sub.children[0].value == sub.children[1].value
        for sub, _ in node.walk()
    )


def instantiate_logic(skeleton: Node, rng: random.Random, config: LogicConfig | None = None) -> Node:
    """A formula with the skeleton's topology: uniform connectives and variables; degenerate draws are redrawn."""
    config = config or LogicConfig()
    for _ in range(config.max_tries):
        node = _draw(skeleton, rng, config)
        if not is_degenerate(node):
            return node
    raise ValueError(f"no non-degenerate instance after max_tries={config.max_tries} draws")


def logic_to_sympy(node: Node) -> Any:
    """The sympy boolean expression of a formula: Symbols joined by And/Or/Xor/Implies/Equivalent."""
    if node.is_leaf:
        if not isinstance(node.value, str):
            raise ValueError(f"logic leaves are propositions, got {node.value!r}")
        return Symbol(node.value)
    if node.op not in _SYMPY_OPS or len(node.children) != 2:
        raise ValueError(f"{node.op!r} with {len(node.children)} operands is not a logic connective")
    left, right = (logic_to_sympy(child) for child in node.children)
    return _SYMPY_OPS[node.op](left, right)  # type: ignore[index]


_TRUTH_TABLE_MAX_VARIABLES = 20


def _tree(value: Node | str) -> Node:
    return parse_infix(value, LOGIC_SYNTAX) if isinstance(value, str) else value


def _truth_table(node: Node, masks: dict[str, int], full: int) -> int:
    """The formula's value under all assignments at once: bit j is its value under assignment j."""
    if node.is_leaf:
        if not isinstance(node.value, str):
            raise ValueError(f"logic leaves are propositions, got {node.value!r}")
        return masks[node.value]
    if node.op not in _SYMPY_OPS or len(node.children) != 2:
        raise ValueError(f"{node.op!r} with {len(node.children)} operands is not a logic connective")
    left, right = (_truth_table(child, masks, full) for child in node.children)
    if node.op == "and":
        return left & right
    if node.op == "or":
        return left | right
    if node.op == "xor":
        return left ^ right
    if node.op == "implies":
        return (full ^ left) | right
    return full ^ (left ^ right)  # iff


def _variable_masks(names: list[str]) -> tuple[dict[str, int], int]:
    """Bit masks over the 2**n assignments: variable i is true in assignment j iff bit i of j is set."""
    rows = 1 << len(names)
    full = (1 << rows) - 1
    masks = {}
    for i, name in enumerate(names):
        half = 1 << i
        block = ((1 << half) - 1) << half  # one period: 2**i false assignments, then 2**i true ones
        masks[name] = block * (full // ((1 << (2 * half)) - 1))
    return masks, full


def truth_table(node: Node, names: list[str]) -> int:
    """The formula's truth table over `names` as one int: bit j is its value under assignment j (variable i true iff
    bit i of j is set); every variable of the formula must be in `names`."""
    masks, full = _variable_masks(names)
    return _truth_table(node, masks, full)


def logic_canonical(node: Node) -> str:
    """``"A,C:<hex table>"``: the variables the formula really depends on (sorted) and its truth table over them, so
    equivalent formulas share it even when one mentions a redundant variable (``A | (A & C)`` and ``A``)."""
    names = sorted(set(node.variables()))
    if len(names) > _TRUTH_TABLE_MAX_VARIABLES:
        return "formula:" + to_sexpr(node)
    masks, full = _variable_masks(names)
    table = _truth_table(node, masks, full)
    essential = [n for i, n in enumerate(names) if (table & masks[n]) >> (1 << i) != table & ~masks[n] & full]
    if len(essential) < len(names):
        masks, _ = _variable_masks(essential)
        masks |= {name: 0 for name in names if name not in essential}  # the table does not depend on them
        table = _truth_table(node, masks, (1 << (1 << len(essential))) - 1)
    return ",".join(essential) + f":{table:x}"


def logic_equivalent(a: Node | str, b: Node | str) -> bool:
    """True iff the formulas agree under every assignment; strings are parsed with LOGIC_SYNTAX (ValueError if not).

    Up to 20 distinct variables the full truth tables are compared (bit-parallel, exact and fast); beyond that, as
    in the paper, ``not satisfiable(Xor(a, b))`` with sympy's SAT solver.
    """
    first, second = _tree(a), _tree(b)
    names = sorted({*first.variables(), *second.variables()})
    if len(names) <= _TRUTH_TABLE_MAX_VARIABLES:
        masks, full = _variable_masks(names)
        return _truth_table(first, masks, full) == _truth_table(second, masks, full)
    return not satisfiable(Xor(logic_to_sympy(first), logic_to_sympy(second)))


__all__ = [
    "LOGIC_NON_COMMUTATIVE",
    "LOGIC_OPERATORS",
    "LOGIC_SYNTAX",
    "LogicConfig",
    "instantiate_logic",
    "is_degenerate",
    "logic_canonical",
    "logic_equivalent",
    "logic_to_sympy",
    "truth_table",
]
