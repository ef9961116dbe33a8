"""Huffman coding (Listings 7-8 of the RTCE paper): (encoded bytes, codebook, padding).

The tree is built from FREQ_DICT (the input's symbol counts in first-occurrence order) with a heap ordered by count
only, as in the listing, so ties are broken by heapq's order. Deviations from the listings: an empty FREQ_DICT (the
empty text) encodes to ([], {}, 0) and decodes to "" (the listing would index an empty heap), and the decoder handles
a one-symbol tree, whose root is a leaf with code '0' (the listing would step into a missing child).
"""

from __future__ import annotations

import heapq
from typing import Any, NamedTuple

from tracegen.algorithms.base import Algorithm, PromptFacts, char_counts, check_freq, is_int

ENCODER_SOURCE = """\
def main_solution(uncompressed):
    from collections import namedtuple
    import heapq
    freq = FREQ_DICT
    Node = namedtuple('Node', ['freq', 'symbol', 'left', 'right'])
    Node.__lt__ = lambda a, b: a.freq < b.freq
    heap = [Node(f, sym, None, None) for sym, f in freq.items()]
    heapq.heapify(heap)
    if not heap:
        return [], {}, 0
    while len(heap) > 1:
        l = heapq.heappop(heap); r = heapq.heappop(heap)
        heapq.heappush(heap, Node(l.freq + r.freq, None, l, r))
    codebook = {}
    def walk(node, prefix):
        if node.symbol is not None:
            codebook[node.symbol] = prefix or '0'
        else:
            walk(node.left, prefix + '0')
            walk(node.right, prefix + '1')
    walk(heap[0], '')
    bitstr = ''.join(codebook[c] for c in uncompressed)
    padding = (-len(bitstr)) % 8
    bitstr += '0' * padding
    encoded_bytes = [int(bitstr[i:i+8], 2) for i in range(0, len(bitstr), 8)]
    return encoded_bytes, codebook, padding
"""

DECODER_SOURCE = """\
def main_solution(compressed):
    from collections import namedtuple
    import heapq
    encoded_bytes, codebook, padding = compressed
    freq = FREQ_DICT
    Node = namedtuple('Node', ['freq', 'symbol', 'left', 'right'])
    Node.__lt__ = lambda a, b: a.freq < b.freq
    heap = [Node(f, sym, None, None) for sym, f in freq.items()]
    heapq.heapify(heap)
    if not heap:
        return ''
    while len(heap) > 1:
        l = heapq.heappop(heap); r = heapq.heappop(heap)
        heapq.heappush(heap, Node(l.freq + r.freq, None, l, r))
    root = heap[0]
    bitstr = ''.join(f'{b:08b}' for b in encoded_bytes)
    if padding:
        bitstr = bitstr[:-padding]
    if root.symbol is not None:
        return root.symbol * len(bitstr)
    result, node = [], root
    for bit in bitstr:
        node = node.left if bit == '0' else node.right
        if node.symbol is not None:
            result.append(node.symbol)
            node = root
    return ''.join(result)
"""


class _Node(NamedTuple):
    freq: int
    symbol: str | None
    left: _Node | None
    right: _Node | None

    def __lt__(self, other: object) -> bool:  # count only, as in the listing
        assert isinstance(other, _Node)
        return self.freq < other.freq


def build_tree(freq: dict[str, int]) -> _Node | None:
    """Huffman tree of `freq` built exactly as the listing does; None for an empty dict."""
    heap = [_Node(f, sym, None, None) for sym, f in freq.items()]
    heapq.heapify(heap)
    if not heap:
        return None
    while len(heap) > 1:
        left = heapq.heappop(heap)
        right = heapq.heappop(heap)
        heapq.heappush(heap, _Node(left.freq + right.freq, None, left, right))
    return heap[0]


def codebook_of(root: _Node) -> dict[str, str]:
    """Symbol -> bitstring, in the listing's walk order (left '0' before right '1')."""
    codebook: dict[str, str] = {}

    def walk(node: _Node, prefix: str) -> None:
        if node.symbol is not None:
            codebook[node.symbol] = prefix or "0"
        else:
            assert node.left is not None and node.right is not None
            walk(node.left, prefix + "0")
            walk(node.right, prefix + "1")

    walk(root, "")
    return codebook


def encode(text: str) -> tuple[list[int], dict[str, str], int]:
    """(encoded bytes, codebook, padding) of `text` under its own symbol counts."""
    root = build_tree(char_counts(text))
    if root is None:
        return [], {}, 0
    codebook = codebook_of(root)
    bitstr = "".join(codebook[c] for c in text)
    padding = (-len(bitstr)) % 8
    bitstr += "0" * padding
    return [int(bitstr[i : i + 8], 2) for i in range(0, len(bitstr), 8)], codebook, padding


def decode(compressed: tuple[list[int], dict[str, str], int], freq: dict[str, int] | None) -> str:
    """Text of (encoded bytes, codebook, padding); the tree is rebuilt from `freq` (the codebook is not used)."""
    if freq is None:
        raise ValueError("Huffman decoding needs the frequency dict")
    encoded_bytes, _codebook, padding = compressed
    root = build_tree(freq)
    if root is None:
        return ""
    bitstr = "".join(f"{b:08b}" for b in encoded_bytes)
    if padding:
        bitstr = bitstr[:-padding]
    return decode_bits(root, bitstr, len(bitstr))


def decode_bits(root: _Node, bitstr: str, limit: int) -> str:
    """The symbols of `bitstr` walked down the tree, at most `limit` of them (a one-symbol tree: `limit` times)."""
    if root.symbol is not None:
        return root.symbol * limit
    result: list[str] = []
    node = root
    for bit in bitstr:
        if len(result) == limit:
            break
        child = node.left if bit == "0" else node.right
        assert child is not None
        node = child
        if node.symbol is not None:
            result.append(node.symbol)
            node = root
    return "".join(result)


def from_json(value: Any) -> tuple[list[int], dict[str, str], int]:
    """Validate JSON [encoded_bytes, codebook, padding]."""
    if not (isinstance(value, list | tuple) and len(value) == 3):
        raise ValueError("Huffman z must be [encoded_bytes, codebook, padding]")
    data, codebook, padding = value
    if not isinstance(data, list) or not all(is_int(b) and 0 <= b < 256 for b in data):
        raise ValueError("Huffman encoded_bytes must be a list of integers in 0..255")
    if not isinstance(codebook, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in codebook.items()
    ):
        raise ValueError("Huffman codebook must map symbols to bitstrings")
    if not is_int(padding) or not 0 <= padding < 8:
        raise ValueError("Huffman padding must be an integer in 0..7")
    return list(data), dict(codebook), padding


def _decode_checked(z: Any, freq: dict[str, int] | None) -> str:
    return decode(z, check_freq(freq) if freq is not None else None)


BLIND_NAMES = {
    "uncompressed": "x",
    "compressed": "x",
    "freq": "p",
    "Node": "N",
    "heap": "h",
    "codebook": "cb",
    "walk": "wk",
    "node": "nd",
    "prefix": "pre",
    "bitstr": "bs",
    "padding": "pad",
    "encoded_bytes": "eb",
    "root": "rt",
    "total": "t",
    "result": "res",
    "sym": "k",
    "f": "v",
    "bit": "q",
}
BLIND_STRINGS = {"'Node'": "'N'"}

ALGORITHM = Algorithm(
    name="huffman",
    label="HUFFMAN",
    paper_column=3,
    description=(
        "Huffman coding: symbols get prefix-free bit codes from a tree built on their counts, "
        "and the bitstring is packed into bytes with zero padding."
    ),
    needs_freq=True,
    freq=char_counts,
    encode=encode,
    decode=_decode_checked,
    encoder_template=ENCODER_SOURCE,
    decoder_template=DECODER_SOURCE,
    from_json=from_json,
    prompt=PromptFacts(
        z_type="tuple",
        z_text="A tuple (encoded_bytes, codebook, padding): the Huffman-coded bits packed into bytes (a list of int), "
        "the codebook (a dict from symbol to bit string) and the number of zero bits padded at the end (an int).",
        answer_type='[list of int, dict of str to str, int] (e.g. [[180], {"a": "0", "b": "10", "c": "11"}, 3])',
        blind_names=BLIND_NAMES,
        blind_strings=BLIND_STRINGS,
    ),
)

BYTES_ENCODER_SOURCE = ENCODER_SOURCE.replace("        return [], {}, 0\n", "        return []\n").replace(
    "    encoded_bytes = [int(bitstr[i:i+8], 2) for i in range(0, len(bitstr), 8)]\n"
    "    return encoded_bytes, codebook, padding\n",
    "    return [int(bitstr[i:i+8], 2) for i in range(0, len(bitstr), 8)]\n",
)
BYTES_DECODER_SOURCE = """\
def main_solution(compressed):
    from collections import namedtuple
    import heapq
    freq = FREQ_DICT
    total = sum(freq.values())
    Node = namedtuple('Node', ['freq', 'symbol', 'left', 'right'])
    Node.__lt__ = lambda a, b: a.freq < b.freq
    heap = [Node(f, sym, None, None) for sym, f in freq.items()]
    heapq.heapify(heap)
    if not heap:
        return ''
    while len(heap) > 1:
        l = heapq.heappop(heap); r = heapq.heappop(heap)
        heapq.heappush(heap, Node(l.freq + r.freq, None, l, r))
    root = heap[0]
    if root.symbol is not None:
        return root.symbol * total
    bitstr = ''.join(f'{b:08b}' for b in compressed)
    result, node = [], root
    for bit in bitstr:
        if len(result) == total:
            break
        node = node.left if bit == '0' else node.right
        if node.symbol is not None:
            result.append(node.symbol)
            node = root
    return ''.join(result)
"""
"""The `bytes` target (the release's): the encoder returns the packed bytes only; the decoder stops after
sum(FREQ_DICT) symbols, so it needs no padding count (the padding bits are never read)."""


def encode_bytes(text: str) -> list[int]:
    """The packed bytes of `text` (the `bytes` target's z)."""
    return encode(text)[0]


def decode_bytes(compressed: list[int], freq: dict[str, int] | None) -> str:
    """Text of packed bytes under `freq`: its first sum(freq) symbols (the `bytes` target's decoder)."""
    if freq is None:
        raise ValueError("Huffman decoding needs the frequency dict")
    check_freq(freq)
    total = sum(freq.values())
    root = build_tree(freq)
    if root is None:
        return ""
    return decode_bits(root, "".join(f"{b:08b}" for b in compressed), total)


def bytes_from_json(value: Any) -> list[int]:
    """Validate JSON encoded bytes (the `bytes` target's z)."""
    if not isinstance(value, list) or not all(is_int(b) and 0 <= b < 256 for b in value):
        raise ValueError("Huffman z must be a list of integers in 0..255")
    return list(value)


BYTES_ALGORITHM = Algorithm(
    name="huffman",
    label="HUFFMAN",
    paper_column=3,
    description=ALGORITHM.description + " Target `bytes`: z is the packed bytes only.",
    needs_freq=True,
    freq=char_counts,
    encode=encode_bytes,
    decode=decode_bytes,
    encoder_template=BYTES_ENCODER_SOURCE,
    decoder_template=BYTES_DECODER_SOURCE,
    from_json=bytes_from_json,
    prompt=PromptFacts(
        z_type="list of int",
        z_text="A list of integers: the Huffman-coded bits packed into bytes, zero-padded.",
        answer_type="list of int (e.g. [102, 114, 111])",
        blind_names=BLIND_NAMES,
        blind_strings=BLIND_STRINGS,
    ),
    variant="bytes",
)
