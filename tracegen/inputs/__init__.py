"""RTCE benchmark inputs: the paper's five source families (Table 2), 56 categories, deterministic per seed."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest

from tracegen.inputs import configs, dna, logs, patterned, tables

Generator = Callable[[random.Random], tuple[str, dict]]

FAMILIES: dict[str, dict[str, Generator]] = {
    "patterned": patterned.GENERATORS,
    "log": logs.GENERATORS,
    "yaml": configs.GENERATORS,
    "tabular": tables.GENERATORS,
    "dna": dna.GENERATORS,
}
MAX_ATTEMPTS = 1000


@dataclass(frozen=True)
class InputItem:
    """One benchmark input string with where it came from."""

    id: str
    family: str
    category: str
    text: str
    metadata: dict = field(default_factory=dict)


def category_order(families: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """All (family, category) pairs (of `families`, or all), interleaving families so that any prefix covers all."""
    chosen = list(FAMILIES) if families is None else list(families)
    unknown = sorted(set(chosen) - set(FAMILIES))
    if unknown or not chosen:
        raise ValueError(f"unknown input family {', '.join(unknown) or '(none given)'} (known: {', '.join(FAMILIES)})")
    columns = [[(family, cat) for cat in FAMILIES[family]] for family in FAMILIES if family in chosen]
    return [pair for row in zip_longest(*columns) for pair in row if pair is not None]


def item_rng(family: str, category: str, seed: int, index: int, attempt: int = 0) -> random.Random:
    """A private RNG for one item, derived by hashing its coordinates (never seed + index)."""
    key = f"{family}\x1f{category}\x1f{seed}\x1f{index}\x1f{attempt}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def generate_inputs(seed: int = 42, num_inputs: int = 250, families: Sequence[str] | None = None) -> list[InputItem]:
    """`num_inputs` unique inputs, round-robin over the 56 categories (of `families`, or all); identical for
    identical arguments."""
    order, seen, items = category_order(families), set(), []
    for index in range(num_inputs):
        family, category = order[index % len(order)]
        text, metadata = _unique(family, category, seed, index, seen)
        seen.add(text)
        items.append(InputItem(f"rtce-{seed}-{index:04d}", family, category, text, metadata))
    return items


def _unique(family: str, category: str, seed: int, index: int, seen: set[str]) -> tuple[str, dict]:
    """Draw from the category until the text is new, retrying with deterministic attempt numbers."""
    generate = FAMILIES[family][category]
    for attempt in range(MAX_ATTEMPTS):
        text, metadata = generate(item_rng(family, category, seed, index, attempt))
        if text not in seen:
            return text, metadata
    raise ValueError(f"category {family}/{category} ran out of unique texts at item {index}")


__all__ = ["FAMILIES", "InputItem", "category_order", "generate_inputs", "item_rng"]
