"""Expression trees shared by every domain (arithmetic, propositional logic, assembly): one immutable node type.

A leaf holds a variable name (``str``) or an integer constant (``int``); an internal node holds an operator name and
its children in argument order. Skeletons are trees whose internal nodes have ``op == "?"`` and whose leaves hold
``"?"``: the topology before instantiation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

HOLE = "?"


@dataclass(frozen=True, slots=True)
class Node:
    """An expression tree node: an operator with children, or a leaf value (variable name or integer)."""

    op: str | None = None
    children: tuple[Node, ...] = ()
    value: str | int | None = None

    def __post_init__(self) -> None:
        if (self.op is None) == (self.value is None):
            raise ValueError("a node is either an operator (op, children) or a leaf (value), not both or neither")
        if self.op is not None and not self.children:
            raise ValueError(f"operator {self.op!r} needs at least one child")
        if self.op is None and self.children:
            raise ValueError("a leaf has no children")

    @property
    def is_leaf(self) -> bool:
        return self.op is None

    @property
    def depth(self) -> int:
        """Edges on the longest root-to-leaf path (a leaf has depth 0, ``A + B`` depth 1)."""
        return 0 if self.is_leaf else 1 + max(child.depth for child in self.children)

    @property
    def n_ops(self) -> int:
        """Internal nodes (operators)."""
        return 0 if self.is_leaf else 1 + sum(child.n_ops for child in self.children)

    def walk(self) -> Iterator[tuple[Node, int]]:
        """Every node with its level (root 0), pre-order."""
        stack: list[tuple[Node, int]] = [(self, 0)]
        while stack:
            node, level = stack.pop()
            yield node, level
            stack.extend((child, level + 1) for child in reversed(node.children))

    def leaves(self) -> list[str | int]:
        """Leaf values, left to right."""
        return [node.value for node, _ in self.walk() if node.is_leaf]  # type: ignore[misc]

    def variables(self) -> list[str]:
        """Variable leaves (strings), left to right, with repeats."""
        return [value for value in self.leaves() if isinstance(value, str)]


def leaf(value: str | int) -> Node:
    """A leaf node."""
    return Node(value=value)


def op(name: str, *children: Node) -> Node:
    """An operator node."""
    return Node(op=name, children=tuple(children))


__all__ = ["HOLE", "Node", "leaf", "op"]
