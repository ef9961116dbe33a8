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


@dataclass(frozen=True)
class LengthRange:
    """Inputs cut to a window of a length drawn uniformly from [min_chars, max_chars] at a random offset (per item,
    from its own RNG): short inputs for small models, every category kept. An input already shorter stays whole."""

    min_chars: int
    max_chars: int

    def __post_init__(self) -> None:
        if not 1 <= self.min_chars <= self.max_chars:
            raise ValueError(f"input lengths need 1 <= min <= max, got {self.min_chars}..{self.max_chars}")

    def cut(self, text: str, rng: random.Random) -> tuple[str, dict]:
        length = rng.randint(self.min_chars, self.max_chars)
        if len(text) <= length:
            return text, {}
        start = rng.randint(0, len(text) - length)
        return text[start : start + length], {"window": [start, len(text)]}


def generate_inputs(
    seed: int = 42, num_inputs: int = 250, families: Sequence[str] | None = None, lengths: LengthRange | None = None
) -> list[InputItem]:
    """`num_inputs` unique inputs, round-robin over the 56 categories (of `families`, or all), cut to `lengths`
    when given; identical for identical arguments."""
    order, seen, items = category_order(families), set(), []
    for index in range(num_inputs):
        family, category = order[index % len(order)]
        text, metadata = _unique(family, category, seed, index, seen, lengths)
        seen.add(text)
        items.append(InputItem(f"rtce-{seed}-{index:04d}", family, category, text, metadata))
    return items


def _unique(
    family: str, category: str, seed: int, index: int, seen: set[str], lengths: LengthRange | None = None
) -> tuple[str, dict]:
    """Draw from the category (cut to `lengths`) until the text is new, retrying with deterministic attempt
    numbers."""
    generate = FAMILIES[family][category]
    for attempt in range(MAX_ATTEMPTS):
        rng = item_rng(family, category, seed, index, attempt)
        text, metadata = generate(rng)
        if lengths is not None:
            text, cut = lengths.cut(text, rng)
            metadata = metadata | cut
        if text not in seen:
            return text, metadata
    raise ValueError(f"category {family}/{category} ran out of unique texts at item {index}")


__all__ = ["FAMILIES", "InputItem", "LengthRange", "category_order", "generate_inputs", "item_rng"]
