"""The four RTCE compression algorithms (LZW, arithmetic encoding, RLE, Huffman) and their registry."""

from __future__ import annotations

from tracegen.algorithms import arithmetic, huffman, lzw, rle
from tracegen.algorithms.arithmetic import ae_roundtrips
from tracegen.algorithms.base import Algorithm, char_counts, to_jsonable

ALGORITHMS: dict[str, Algorithm] = {
    alg.name: alg for alg in (lzw.ALGORITHM, arithmetic.ALGORITHM, rle.ALGORITHM, huffman.ALGORITHM)
}


def get_algorithm(name: str) -> Algorithm:
    """The registry entry called `name`; ValueError naming the known ones otherwise."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r} (known: {', '.join(ALGORITHMS)})") from None


__all__ = ["ALGORITHMS", "Algorithm", "ae_roundtrips", "char_counts", "get_algorithm", "to_jsonable"]
