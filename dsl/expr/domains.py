"""A registry of expression domains (arithmetic, propositional logic) for the suite and the fine-tuning data."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dsl.expr.arithmetic import ARITHMETIC_NON_COMMUTATIVE, ARITHMETIC_OPERATORS, instantiate, to_sympy
from dsl.expr.serialize import ARITHMETIC, InfixSyntax
from dsl.expr.tree import Node

DOMAIN_NAMES = ("arithmetic", "logic")


@dataclass(frozen=True)
class Domain:
    """What the suite needs from a domain: syntax, operators, instantiation and the sympy form."""

    name: str
    syntax: InfixSyntax
    operators: tuple[str, ...]
    non_commutative: frozenset[str]
    instantiate: Callable[[Node, random.Random], Node]
    to_sympy: Callable[[Node], Any]


def _arithmetic() -> Domain:
    return Domain(
        name="arithmetic",
        syntax=ARITHMETIC,
        operators=ARITHMETIC_OPERATORS,
        non_commutative=ARITHMETIC_NON_COMMUTATIVE,
        instantiate=lambda skeleton, rng: instantiate(skeleton, rng),
        to_sympy=to_sympy,
    )


def _logic() -> Domain:
    from dsl.expr import logic  # lazy: the logic domain lives in its own module

    return Domain(
        name="logic",
        syntax=logic.LOGIC_SYNTAX,
        operators=tuple(logic.LOGIC_OPERATORS),
        non_commutative=frozenset(logic.LOGIC_NON_COMMUTATIVE),
        instantiate=lambda skeleton, rng: logic.instantiate_logic(skeleton, rng),
        to_sympy=logic.logic_to_sympy,
    )


def get_domain(name: str) -> Domain:
    """The domain called ``name``; ValueError listing the choices otherwise."""
    if name == "arithmetic":
        return _arithmetic()
    if name == "logic":
        return _logic()
    raise ValueError(f"unknown domain {name!r}; choose one of {', '.join(DOMAIN_NAMES)}")


__all__ = ["DOMAIN_NAMES", "Domain", "get_domain"]
