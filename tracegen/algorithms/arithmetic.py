"""Arithmetic encoding, AE (Listings 3-4 of the RTCE paper): the text becomes the midpoint of its final interval.

FREQ_DICT is the input's symbol counts in first-occurrence order plus 'EOF': 1; symbols are taken in sorted order
for the cumulative counts. The listings code with Python floats, so the round trip breaks once the final interval is
narrower than float resolution. Measured with `precision_report()` (seeded random texts, first failing prefix
length for seeds 0-4; `information_bits` = -log2 of the exact final interval width):

- alphabet 'ab': first failure at length 47-55 (53.9-60.6 bits),
- alphabet 'ACGT': 25-28 (53.9-62.1 bits),
- lowercase a-z: 15-16 (58.0-63.5 bits),
- printable ASCII, 95 symbols: 13-14 (53.3-58.6 bits),
- a single repeated symbol ('a' * n, ~1.4 + log2(n) bits): never fails up to n = 2000.

Every prefix below the first failure carried at most 60 bits, and failures start near 53 bits (the float mantissa).
Failure is not monotonic in length (a longer prefix sometimes decodes again), so each text must be checked itself.
Texts of realistic benchmark length (logs, YAML, tables) therefore mostly do NOT round trip through float AE:
`ae_roundtrips(text)` (the `exact` of the registry entry) tells, and such items must be marked, never stored with
labels claiming a round trip. `encode_exact` / `decode_exact` are the same coder on `fractions.Fraction`, which always
round trips. The plain float `decode` follows Listing 4 step for step but raises ValueError where the listing would
divide by zero, find no symbol, or run past len(text) = total - 1 symbols without meeting 'EOF' (loop forever).
"""

from __future__ import annotations

import math
import random
import string
from fractions import Fraction
from typing import Any

from tracegen.algorithms.base import Algorithm, PromptFacts, char_counts, check_freq, is_int

ENCODER_SOURCE = """\
def main_solution(uncompressed):
    freq = FREQ_DICT
    total = sum(freq.values())
    symbols = sorted(freq.keys())
    cum_counts, running = {}, 0
    for sym in symbols:
        cum_counts[sym] = running
        running += freq[sym]
    low, high = 0.0, 1.0
    for c in list(uncompressed) + ['EOF']:
        width = high - low
        high = low + width * (cum_counts[c] + freq[c]) / total
        low = low + width * cum_counts[c] / total
    return (low + high) / 2
"""

DECODER_SOURCE = """\
def main_solution(compressed):
    freq = FREQ_DICT
    total = sum(freq.values())
    symbols = sorted(freq.keys())
    cum_counts, running = {}, 0
    for s in symbols:
        cum_counts[s] = running
        running += freq[s]
    low, high = 0.0, 1.0
    result = []
    while True:
        width = high - low
        scaled = (compressed - low) / width * total
        for s in symbols:
            if cum_counts[s] <= scaled < cum_counts[s] + freq[s]:
                symbol = s
                break
        if symbol == 'EOF':
            break
        result.append(symbol)
        high = low + width * (cum_counts[symbol] + freq[symbol]) / total
        low = low + width * cum_counts[symbol] / total
    return ''.join(result)
"""

EOF_SYMBOL = "EOF"


def ae_freq(text: str) -> dict[str, int]:
    """FREQ_DICT of AE: symbol counts in first-occurrence order, then 'EOF': 1."""
    freq = char_counts(text)
    freq[EOF_SYMBOL] = 1
    return freq


def _model(freq: dict[str, int]) -> tuple[int, list[str], dict[str, int]]:
    total = sum(freq.values())
    symbols = sorted(freq)
    cum_counts: dict[str, int] = {}
    running = 0
    for sym in symbols:
        cum_counts[sym] = running
        running += freq[sym]
    return total, symbols, cum_counts


def encode(text: str) -> float:
    """Float midpoint of the final interval of `text` + EOF, exactly as Listing 3 computes it."""
    freq = ae_freq(text)
    total, _symbols, cum_counts = _model(freq)
    low, high = 0.0, 1.0
    for c in [*text, EOF_SYMBOL]:
        width = high - low
        high = low + width * (cum_counts[c] + freq[c]) / total
        low = low + width * cum_counts[c] / total
    return (low + high) / 2


def decode(compressed: float, freq: dict[str, int] | None) -> str:
    """Text of a float code under `freq`, as Listing 4 decodes it; ValueError where the listing fails or loops."""
    if freq is None:
        raise ValueError("AE decoding needs the frequency dict")
    check_freq(freq)
    if EOF_SYMBOL not in freq:
        raise ValueError("AE freq must contain 'EOF'")
    total, symbols, cum_counts = _model(freq)
    low, high = 0.0, 1.0
    result: list[str] = []
    symbol: str | None = None  # like the listing, a symbol that is not re-found is kept from the previous step
    while True:
        width = high - low
        if width == 0:
            raise ValueError("AE interval collapsed to zero width (float precision)")
        scaled = (compressed - low) / width * total
        for s in symbols:
            if cum_counts[s] <= scaled < cum_counts[s] + freq[s]:
                symbol = s
                break
        if symbol is None:
            raise ValueError(f"AE code {compressed!r} lies outside every symbol interval")
        if symbol == EOF_SYMBOL:
            break
        if len(result) >= total - 1:
            raise ValueError("AE decoding ran past the text length without reaching EOF (float precision)")
        result.append(symbol)
        high = low + width * (cum_counts[symbol] + freq[symbol]) / total
        low = low + width * cum_counts[symbol] / total
    return "".join(result)


def encode_exact(text: str) -> Fraction:
    """Exact midpoint of the final interval of `text` + EOF (same coder on Fractions)."""
    freq = ae_freq(text)
    total, _symbols, cum_counts = _model(freq)
    low, high = Fraction(0), Fraction(1)
    for c in [*text, EOF_SYMBOL]:
        width = high - low
        high = low + width * (cum_counts[c] + freq[c]) / total
        low = low + width * cum_counts[c] / total
    return (low + high) / 2


def decode_exact(compressed: Fraction, freq: dict[str, int]) -> str:
    """Text of an exact Fraction code under `freq`; ValueError if it does not decode within total - 1 symbols."""
    check_freq(freq)
    if EOF_SYMBOL not in freq:
        raise ValueError("AE freq must contain 'EOF'")
    total, symbols, cum_counts = _model(freq)
    low, high = Fraction(0), Fraction(1)
    code = Fraction(compressed)
    result: list[str] = []
    while True:
        width = high - low
        scaled = (code - low) / width * total
        symbol = next((s for s in symbols if cum_counts[s] <= scaled < cum_counts[s] + freq[s]), None)
        if symbol is None:
            raise ValueError(f"AE code {compressed} lies outside every symbol interval")
        if symbol == EOF_SYMBOL:
            return "".join(result)
        if len(result) >= total - 1:
            raise ValueError("AE decoding ran past the text length without reaching EOF")
        result.append(symbol)
        high = low + width * (cum_counts[symbol] + freq[symbol]) / total
        low = low + width * cum_counts[symbol] / total


def ae_roundtrips(text: str) -> bool:
    """True when float AE (the listings) decodes its own code of `text` back to `text`."""
    try:
        return decode(encode(text), ae_freq(text)) == text
    except ValueError:
        return False


def information_bits(text: str) -> float:
    """Bits of the final AE interval of `text` + EOF under its own counts (-log2 of the interval width)."""
    freq = ae_freq(text)
    total = sum(freq.values())
    return sum(-math.log2(freq[c] / total) for c in [*text, EOF_SYMBOL])


def first_failing_length(alphabet: str, seed: int = 0, max_length: int = 200) -> int | None:
    """Shortest length n at which a seeded random text over `alphabet` (prefix of one stream) fails float AE."""
    rng = random.Random(seed)
    text = "".join(rng.choice(alphabet) for _ in range(max_length))
    return next((n for n in range(1, max_length + 1) if not ae_roundtrips(text[:n])), None)


def precision_report(seeds: range = range(5)) -> dict[str, list[int | None]]:
    """First failing lengths per alphabet and seed (the numbers in this module's docstring)."""
    alphabets = {"ab": "ab", "ACGT": "ACGT", "a-z": string.ascii_lowercase, "printable": string.printable[:95]}
    return {name: [first_failing_length(alpha, seed) for seed in seeds] for name, alpha in alphabets.items()}


def from_json(value: Any) -> float:
    """Validate a JSON AE code (a number)."""
    if not (isinstance(value, float) or is_int(value)):
        raise ValueError("AE z must be a number")
    return float(value)


ALGORITHM = Algorithm(
    name="ae",
    label="AE",
    paper_column=0,
    description=(
        "Arithmetic encoding: the text plus an EOF marker narrows [0, 1) by symbol frequencies "
        "and is replaced by the midpoint of the final interval."
    ),
    needs_freq=True,
    freq=ae_freq,
    encode=encode,
    decode=decode,
    encoder_template=ENCODER_SOURCE,
    decoder_template=DECODER_SOURCE,
    from_json=from_json,
    prompt=PromptFacts(
        z_type="float",
        z_text="A number in [0, 1) representing the arithmetic-encoded form of the input string.",
        answer_type="float (e.g. 0.4137)",
        blind_names={
            "uncompressed": "x",
            "compressed": "x",
            "freq": "p",
            "total": "t",
            "symbols": "ks",
            "cum_counts": "cc",
            "running": "m",
            "sym": "k",
            "low": "lo",
            "high": "hi",
            "width": "w",
            "scaled": "sc",
            "result": "r",
            "symbol": "y",
        },
    ),
    exact=ae_roundtrips,
)
