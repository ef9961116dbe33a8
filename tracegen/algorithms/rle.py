"""Run-length encoding (Listings 5-6 of the RTCE paper): the text becomes a list of (symbol, count) tuples."""

from __future__ import annotations

from typing import Any

from tracegen.algorithms.base import Algorithm, PromptFacts, is_int

ENCODER_SOURCE = """\
def main_solution(uncompressed):
    if not uncompressed:
        return []
    result = []
    prev_char = uncompressed[0]
    count = 1
    for c in uncompressed[1:]:
        if c == prev_char:
            count += 1
        else:
            result.append((prev_char, count))
            prev_char = c
            count = 1
    result.append((prev_char, count))
    return result
"""

DECODER_SOURCE = """\
def main_solution(compressed):
    result = []
    for char, count in compressed:
        result.append(char * count)
    return ''.join(result)
"""


def encode(text: str) -> list[tuple[str, int]]:
    """Runs of `text` as (symbol, count) tuples; [] for the empty text."""
    if not text:
        return []
    result: list[tuple[str, int]] = []
    prev_char, count = text[0], 1
    for c in text[1:]:
        if c == prev_char:
            count += 1
        else:
            result.append((prev_char, count))
            prev_char, count = c, 1
    result.append((prev_char, count))
    return result


def decode(runs: list[tuple[str, int]], freq: dict[str, int] | None = None) -> str:
    """Text of a run list. `freq` is ignored."""
    return "".join(char * count for char, count in runs)


def from_json(value: Any) -> list[tuple[str, int]]:
    """Validate JSON runs ([[symbol, count], ...]) and return them as tuples."""
    if not isinstance(value, list) or not all(
        isinstance(p, list | tuple) and len(p) == 2 and isinstance(p[0], str) and is_int(p[1]) and p[1] >= 0
        for p in value
    ):
        raise ValueError("RLE z must be a list of [symbol, count] pairs")
    return [(p[0], p[1]) for p in value]


ALGORITHM = Algorithm(
    name="rle",
    label="RLE",
    paper_column=2,
    description="Run-length encoding: the text is replaced by a list of (symbol, run length) pairs.",
    needs_freq=False,
    freq=lambda text: None,
    encode=encode,
    decode=decode,
    encoder_template=ENCODER_SOURCE,
    decoder_template=DECODER_SOURCE,
    from_json=from_json,
    prompt=PromptFacts(
        z_type="list of tuple",
        z_text="A list of (char, count) tuples representing the run-length encoded string.",
        answer_type='list of [str, int] pairs (e.g. [["a", 3], ["b", 2]])',
        blind_names={
            "uncompressed": "x",
            "compressed": "x",
            "result": "r",
            "prev_char": "a",
            "count": "b",
            "char": "a",
        },
    ),
)
