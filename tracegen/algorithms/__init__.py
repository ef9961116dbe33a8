"""The four RTCE compression algorithms (LZW, arithmetic encoding, RLE, Huffman) and their registry."""

from __future__ import annotations

from tracegen.algorithms import arithmetic, huffman, lzw, rle
from tracegen.algorithms.arithmetic import ae_roundtrips
from tracegen.algorithms.base import Algorithm, char_counts, to_jsonable

ALGORITHMS: dict[str, Algorithm] = {
    alg.name: alg for alg in (lzw.ALGORITHM, arithmetic.ALGORITHM, rle.ALGORITHM, huffman.ALGORITHM)
}


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
    "Algorithm",
    "ae_roundtrips",
    "algorithms_for",
    "char_counts",
    "get_algorithm",
    "to_jsonable",
]
