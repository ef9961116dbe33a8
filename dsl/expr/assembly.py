"""The assembly domain (NL paper §4, App. O.1): mixed-arity operators over coloured-object parts.

Thirteen operators: unary label, inspect, polish; binary weld, glue, rivet (commutative) and mount, pour, load (not);
ternary mix, assort (commutative) and layer, thread (not). Leaves are parts ``<colour>-<object>`` from 13 colours x
13 objects, a vocabulary disjoint from arithmetic. Expressions are written as S-expressions
(``(mount (polish red-gear) blue-plate)``); two expressions are equivalent when their canonical forms agree, the
canonical form sorting the children of commutative operators.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from dsl.expr.serialize import parse_sexpr, to_sexpr
from dsl.expr.tree import Node, leaf, op


@dataclass(frozen=True)
class AssemblyOperator:
    """An assembly operator: its arity and whether the order of its parts matters."""

    name: str
    arity: int
    commutative: bool


ASSEMBLY_OPERATORS: dict[str, AssemblyOperator] = {
    spec.name: spec
    for spec in (
        AssemblyOperator("label", 1, False),
        AssemblyOperator("inspect", 1, False),
        AssemblyOperator("polish", 1, False),
        AssemblyOperator("weld", 2, True),
        AssemblyOperator("glue", 2, True),
        AssemblyOperator("rivet", 2, True),
        AssemblyOperator("mount", 2, False),
        AssemblyOperator("pour", 2, False),
        AssemblyOperator("load", 2, False),
        AssemblyOperator("mix", 3, True),
        AssemblyOperator("assort", 3, True),
        AssemblyOperator("layer", 3, False),
        AssemblyOperator("thread", 3, False),
    )
}
COLOURS = (
    "red",
    "blue",
    "green",
    "yellow",
    "orange",
    "purple",
    "black",
    "white",
    "grey",
    "brown",
    "pink",
    "silver",
    "gold",
)
OBJECTS = (
    "gear",
    "plate",
    "bolt",
    "spring",
    "panel",
    "rod",
    "hinge",
    "wheel",
    "bracket",
    "valve",
    "cog",
    "tube",
    "disc",
)
PARTS = tuple(f"{colour}-{obj}" for colour in COLOURS for obj in OBJECTS)
_PARTS = frozenset(PARTS)


@dataclass
class AssemblyConfig:
    """How random assembly trees are drawn."""

    min_depth: int = field(default=2, metadata={"help": "smallest depth drawn when no depth is given"})
    max_depth: int = field(default=5, metadata={"help": "largest depth drawn when no depth is given"})
    leaf_prob: float = field(
        default=0.5,
        metadata={"help": "probability that a child not carrying the depth is a part (else a subtree, depth uniform)"},
    )
    max_tries: int = field(default=100, metadata={"help": "draws before giving up on a non-degenerate tree"})

    def __post_init__(self) -> None:
        if self.min_depth < 1:
            raise ValueError(f"min_depth must be >= 1, got {self.min_depth}")
        if self.max_depth < self.min_depth:
            raise ValueError(f"max_depth must be >= min_depth ({self.min_depth}), got {self.max_depth}")
        if not 0.0 <= self.leaf_prob <= 1.0:
            raise ValueError(f"leaf_prob must be in [0, 1], got {self.leaf_prob}")
        if self.max_tries < 1:
            raise ValueError(f"max_tries must be >= 1, got {self.max_tries}")


def _grow(rng: random.Random, depth: int, leaf_prob: float) -> Node:
    """A tree of depth exactly `depth`: a uniform operator whose uniformly chosen child carries depth - 1; every
    other child is a part with probability `leaf_prob`, else a subtree of depth uniform in 1..depth - 1."""
    if depth == 0:
        return leaf(rng.choice(PARTS))
    spec = ASSEMBLY_OPERATORS[rng.choice(list(ASSEMBLY_OPERATORS))]
    carrier = rng.randrange(spec.arity)
    children = []
    for index in range(spec.arity):
        if index == carrier:
            child_depth = depth - 1
        elif depth == 1 or rng.random() < leaf_prob:
            child_depth = 0
        else:
            child_depth = rng.randint(1, depth - 1)
        children.append(_grow(rng, child_depth, leaf_prob))
    return op(spec.name, *children)


def is_degenerate(node: Node) -> bool:
    """True when some operator takes the same part twice directly (``(weld red-gear red-gear)``)."""
    for current, _ in node.walk():
        parts = [child.value for child in current.children if child.is_leaf]
        if len(parts) != len(set(parts)):
            return True
    return False


def random_assembly(rng: random.Random, depth: int | None = None, config: AssemblyConfig | None = None) -> Node:
    """A random non-degenerate assembly tree of exactly `depth` (None: uniform in config's min..max depth)."""
    config = config or AssemblyConfig()
    if depth is None:
        depth = rng.randint(config.min_depth, config.max_depth)
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    for _ in range(config.max_tries):
        node = _grow(rng, depth, config.leaf_prob)
        if not is_degenerate(node):
            return node
    raise ValueError(f"no non-degenerate assembly tree of depth {depth} in {config.max_tries} tries")


def check_assembly(node: Node) -> None:
    """Raise ValueError unless every operator is an assembly operator with its arity and every leaf a known part."""
    for current, _ in node.walk():
        if current.is_leaf:
            if current.value not in _PARTS:
                raise ValueError(f"{current.value!r} is not a part (<colour>-<object>)")
            continue
        spec = ASSEMBLY_OPERATORS.get(current.op)  # type: ignore[arg-type]
        if spec is None:
            raise ValueError(f"unknown assembly operator {current.op!r}")
        if len(current.children) != spec.arity:
            raise ValueError(f"{current.op!r} takes {spec.arity} parts, got {len(current.children)}")


def leaf_words(part: str) -> str:
    """``red-gear`` -> ``the red gear``."""
    if part not in _PARTS:
        raise ValueError(f"{part!r} is not a part (<colour>-<object>)")
    colour, obj = part.split("-")
    return f"the {colour} {obj}"


def parse_leaf_words(text: str) -> str:
    """``the red gear`` -> ``red-gear``."""
    words = text.split()
    part = "-".join(words[1:])
    if len(words) != 3 or words[0] != "the" or part not in _PARTS:
        raise ValueError(f"{text!r} does not name a part (the <colour> <object>)")
    return part


def _canonical_tree(node: Node) -> Node:
    if node.is_leaf:
        return node
    children = [_canonical_tree(child) for child in node.children]
    spec = ASSEMBLY_OPERATORS.get(node.op)  # type: ignore[arg-type]
    if spec is not None and spec.commutative:
        children.sort(key=to_sexpr)
    return op(node.op, *children)  # type: ignore[arg-type]


def canonical(node: Node) -> str:
    """The S-expression with each commutative operator's children sorted by their canonical strings."""
    return to_sexpr(_canonical_tree(node))


def assembly_equivalent(a: Node | str, b: Node | str) -> bool:
    """Equal up to the order of commutative operators' parts; strings are S-expressions (ValueError if malformed)."""
    first = parse_sexpr(a) if isinstance(a, str) else a
    second = parse_sexpr(b) if isinstance(b, str) else b
    return canonical(first) == canonical(second)


__all__ = [
    "ASSEMBLY_OPERATORS",
    "COLOURS",
    "OBJECTS",
    "PARTS",
    "AssemblyConfig",
    "AssemblyOperator",
    "assembly_equivalent",
    "canonical",
    "check_assembly",
    "is_degenerate",
    "leaf_words",
    "parse_leaf_words",
    "random_assembly",
]
