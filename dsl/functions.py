"""The 24 functions of the KT sequence DSL, with the official semantics and argument kinds.

Semantics follow the official release (facebookresearch/KoLMogorov, generate_data.py): plain Python list operations on
ints. The sampler keeps every value in 0..255; the interpreter applies the same functions to any program text.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from enum import StrEnum

Values = list[int]


class ArgKind(StrEnum):
    """What a function argument must be in program text."""

    INT = "int"  # an integer literal
    LIST = "list"  # a list literal of integers
    SEQ = "seq"  # a reference to a previously defined sequence
    PRED = "pred"  # the name of a predicate (only as filter's first argument)


# ----- initiators
def range_func_up(start: int, end: int) -> Values:
    return list(range(start, end + 1))


def range_func_interval(start: int, end: int, interval: int) -> Values:
    return list(range(start, end, interval))


def repeat_num(num: int, value: int) -> Values:
    return [value] * num


def set_list(values: Sequence[int]) -> Values:
    return list(values)


# ----- modifiers
def repeat_list(num: int, seq: Values) -> Values:
    return seq * num


def reverse_list(seq: Values) -> Values:
    return seq[::-1]


def substitute(seq: Values, pattern: int, replacement: int) -> Values:
    return [replacement if x == pattern else x for x in seq]


def get_subsequence_with_jumps(seq: Values, jump: int) -> Values:
    return seq[::jump]


def get_subsequence_between_indices(seq: Values, start: int, end: int) -> Values:
    return seq[start:end]


def max_n(seq: Values, n: int) -> Values:
    return heapq.nlargest(n, seq)


def min_n(seq: Values, n: int) -> Values:
    return heapq.nsmallest(n, seq)


def add_item_list(seq: Values, constant: int) -> Values:
    return [x + constant for x in seq]


def subtract_item_list(seq: Values, constant: int) -> Values:
    return [x - constant for x in seq]


def modulo_item_list(seq: Values, constant: int) -> Values:
    return [x % constant for x in seq]


def scan_add(seq: Values) -> Values:
    out: Values = []
    total = 0
    for x in seq:
        total += x
        out.append(total)
    return out


# ----- filters
def is_even(x: int) -> bool:
    return x % 2 == 0


def is_odd(x: int) -> bool:
    return x % 2 != 0


def is_not_zero(x: int) -> bool:
    return x != 0


def filter_list(predicate: Callable[[int], bool], seq: Values) -> Values:
    return [x for x in seq if predicate(x)]


# ----- mergers
def add_two_lists(a: Values, b: Values) -> Values:
    return [x + y for x, y in zip(a, b)]


def subtract_two_lists(a: Values, b: Values) -> Values:
    return [x - y for x, y in zip(a, b)]


def modulo_two_lists(a: Values, b: Values) -> Values:
    """Pairwise modulo; pairs whose divisor is zero are skipped (the official behaviour)."""
    return [x % y for x, y in zip(a, b) if y != 0]


def concatenate(a: Values, b: Values) -> Values:
    return a + b


def interleave(a: Values, b: Values) -> Values:
    """Alternate a[0], b[0], a[1], ...; the longer list's tail is appended."""
    out = [v for pair in zip(a, b) for v in pair]
    shorter = min(len(a), len(b))
    return out + (a if len(a) > len(b) else b)[shorter:]


PREDICATES: dict[str, Callable[[int], bool]] = {"is_even": is_even, "is_odd": is_odd, "is_not_zero": is_not_zero}

_I, _L, _S, _P = ArgKind.INT, ArgKind.LIST, ArgKind.SEQ, ArgKind.PRED

# name -> (implementation, argument kinds); the order is the official one.
FUNCTIONS: dict[str, tuple[Callable[..., Values], tuple[ArgKind, ...]]] = {
    "range_func_up": (range_func_up, (_I, _I)),
    "range_func_interval": (range_func_interval, (_I, _I, _I)),
    "repeat_num": (repeat_num, (_I, _I)),
    "set_list": (set_list, (_L,)),
    "repeat_list": (repeat_list, (_I, _S)),
    "reverse_list": (reverse_list, (_S,)),
    "substitute": (substitute, (_S, _I, _I)),
    "get_subsequence_with_jumps": (get_subsequence_with_jumps, (_S, _I)),
    "get_subsequence_between_indices": (get_subsequence_between_indices, (_S, _I, _I)),
    "max_n": (max_n, (_S, _I)),
    "min_n": (min_n, (_S, _I)),
    "add_item_list": (add_item_list, (_S, _I)),
    "subtract_item_list": (subtract_item_list, (_S, _I)),
    "modulo_item_list": (modulo_item_list, (_S, _I)),
    "filter": (filter_list, (_P, _S)),
    "add_two_lists": (add_two_lists, (_S, _S)),
    "subtract_two_lists": (subtract_two_lists, (_S, _S)),
    "modulo_two_lists": (modulo_two_lists, (_S, _S)),
    "scan_add": (scan_add, (_S,)),
    "concatenate": (concatenate, (_S, _S)),
    "interleave": (interleave, (_S, _S)),
}

# The 24 official names: 21 callable functions plus the 3 predicates.
FUNCTION_NAMES: tuple[str, ...] = (*FUNCTIONS, *PREDICATES)
NUM_FUNCTIONS = len(FUNCTION_NAMES)
