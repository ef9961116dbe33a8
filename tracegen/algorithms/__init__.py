"""The four RTCE compression algorithms (LZW, arithmetic encoding, RLE, Huffman) and their registry: every list of
algorithm names, every label and every prompt fact is read from here (an algorithm is its module and its entry)."""

from __future__ import annotations

from tracegen.algorithms import arithmetic, huffman, lzw, rle
from tracegen.algorithms.arithmetic import ae_roundtrips
from tracegen.algorithms.base import Algorithm, PromptFacts, char_counts, to_jsonable

ALGORITHMS: dict[str, Algorithm] = {
    alg.name: alg for alg in (lzw.ALGORITHM, arithmetic.ALGORITHM, rle.ALGORITHM, huffman.ALGORITHM)
}
"""Name -> algorithm, in the order corpora are generated."""
PAPER_ORDER = tuple(sorted(ALGORITHMS, key=lambda name: ALGORITHMS[name].paper_column))
"""The names in the order of the paper's tables (reports and evaluations use it)."""


def algorithm_label(name: str) -> str:
    """`name` as the paper's tables write it (an unknown name upper-cased)."""
    return ALGORITHMS[name].label if name in ALGORITHMS else name.upper()


HUFFMAN_TARGETS = ("triple", "bytes")
"""What Huffman's z is: `triple` (the paper's Listings 7-8: bytes, codebook, padding) or `bytes` (the release's)."""


def get_algorithm(name: str, huffman_target: str = "triple") -> Algorithm:
    """The registry entry called `name` (Huffman in the given target); ValueError naming the known ones otherwise."""
    if huffman_target not in HUFFMAN_TARGETS:
        raise ValueError(f"unknown Huffman target {huffman_target!r} (known: {', '.join(HUFFMAN_TARGETS)})")
    if name == "huffman" and huffman_target == "bytes":
        return huffman.BYTES_ALGORITHM
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r} (known: {', '.join(ALGORITHMS)})") from None


def algorithms_for(huffman_target: str = "triple") -> dict[str, Algorithm]:
    """The registry with Huffman in the given target."""
    return {name: get_algorithm(name, huffman_target) for name in ALGORITHMS}


__all__ = [
    "ALGORITHMS",
    "HUFFMAN_TARGETS",
    "PAPER_ORDER",
    "Algorithm",
    "PromptFacts",
    "ae_roundtrips",
    "algorithm_label",
    "algorithms_for",
    "char_counts",
    "get_algorithm",
    "to_jsonable",
]
