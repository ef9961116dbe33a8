"""LZW (Listings 1-2 of the RTCE paper): the text becomes a list of integer codes.

Deviations from the listings, both invisible on ASCII input: the encoder works on the text's UTF-8 bytes (seen as
Latin-1 characters, so the 256-entry initial dictionary covers every input, emoji and CJK included) and the decoder
turns its result back from UTF-8; the decoder returns "" for an empty code list (the listing's pop(0) would raise).
"""

from __future__ import annotations

from typing import Any

from tracegen.algorithms.base import Algorithm, PromptFacts, is_int

ENCODER_SOURCE = """\
def main_solution(uncompressed):
    uncompressed = uncompressed.encode("utf-8").decode("latin-1")
    dict_size = 256
    dictionary = {chr(i): i for i in range(dict_size)}
    w = ""
    result = []
    for c in uncompressed:
        wc = w + c
        if wc in dictionary:
            w = wc
        else:
            result.append(dictionary[w])
            dictionary[wc] = dict_size
            dict_size += 1
            w = c
    if w:
        result.append(dictionary[w])
    return result
"""

DECODER_SOURCE = """\
def main_solution(compressed):
    if not compressed:
        return ""
    dict_size = 256
    dictionary = {i: chr(i) for i in range(dict_size)}
    result = []
    w = chr(compressed.pop(0))
    result.append(w)
    for k in compressed:
        if k in dictionary:
            entry = dictionary[k]
        elif k == dict_size:
            entry = w + w[0]
        else:
            raise ValueError("Bad compressed k: %s" % k)
        result.append(entry)
        dictionary[dict_size] = w + entry[0]
        dict_size += 1
        w = entry
    return "".join(result).encode("latin-1").decode("utf-8")
"""


def encode(text: str) -> list[int]:
    """LZW codes of `text` (of its UTF-8 bytes)."""
    data = text.encode("utf-8").decode("latin-1")
    dict_size = 256
    dictionary = {chr(i): i for i in range(dict_size)}
    w = ""
    result: list[int] = []
    for c in data:
        wc = w + c
        if wc in dictionary:
            w = wc
        else:
            result.append(dictionary[w])
            dictionary[wc] = dict_size
            dict_size += 1
            w = c
    if w:
        result.append(dictionary[w])
    return result


def decode(codes: list[int], freq: dict[str, int] | None = None) -> str:
    """Text of an LZW code list; ValueError on a bad code or invalid UTF-8. `freq` is ignored."""
    if not codes:
        return ""
    dict_size = 256
    dictionary = {i: chr(i) for i in range(dict_size)}
    if not 0 <= codes[0] < dict_size:
        raise ValueError(f"Bad compressed k: {codes[0]}")
    w = chr(codes[0])
    result = [w]
    for k in codes[1:]:
        if k in dictionary:
            entry = dictionary[k]
        elif k == dict_size:
            entry = w + w[0]
        else:
            raise ValueError(f"Bad compressed k: {k}")
        result.append(entry)
        dictionary[dict_size] = w + entry[0]
        dict_size += 1
        w = entry
    return "".join(result).encode("latin-1").decode("utf-8")


def from_json(value: Any) -> list[int]:
    """Validate a JSON code list."""
    if not isinstance(value, list) or not all(is_int(k) and k >= 0 for k in value):
        raise ValueError("LZW z must be a list of non-negative integers")
    return list(value)


ALGORITHM = Algorithm(
    name="lzw",
    label="LZW",
    paper_column=1,
    description="Lempel-Ziv-Welch compression: the text is replaced by a list of integer dictionary codes.",
    needs_freq=False,
    freq=lambda text: None,
    encode=encode,
    decode=decode,
    encoder_template=ENCODER_SOURCE,
    decoder_template=DECODER_SOURCE,
    from_json=from_json,
    prompt=PromptFacts(
        z_type="list of int",
        z_text="A list of integer codes representing the LZW-compressed form of the input string.",
        answer_type="list of int (e.g. [97, 98, 256])",
        blind_names={
            "uncompressed": "x",
            "compressed": "x",
            "dict_size": "n",
            "dictionary": "d",
            "result": "r",
            "entry": "e",
        },
        blind_strings={"Bad compressed k": "Bad k"},
    ),
)
