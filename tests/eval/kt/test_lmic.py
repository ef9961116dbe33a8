"""LMiC on the embedded SmolLM2-135M-Instruct: exact round trips, determinism, real compression, bad inputs."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from eval.kt.lmic import LMiCCode, LMiCCoder, LMiCConfig, lmic_bits, lmic_compression_rate

_RNG = random.Random(128)
RANDOM_128 = [_RNG.randrange(256) for _ in range(128)]
REGULAR_128 = list(range(128))
DNA_128 = [_RNG.randrange(8) for _ in range(128)]


@pytest.fixture(scope="module")
def coder() -> LMiCCoder:
    return LMiCCoder(LMiCConfig())


@pytest.fixture(scope="module")
def codes(coder: LMiCCoder) -> dict[str, LMiCCode]:
    """The slow tests' codes, made once."""
    return {name: coder.encode(seq) for name, seq in [("random", RANDOM_128), ("regular", REGULAR_128)]}


@pytest.mark.parametrize("sequence", [[12, 250, 3], [0], [255], [7], [0, 0, 100, 10, 1, 0, 200, 99]])
def test_round_trip_short(coder: LMiCCoder, sequence: list[int]) -> None:
    code = coder.encode(sequence)
    assert coder.decode(code) == sequence
    assert code.words.dtype == np.uint32 and code.num_bits == 32 * len(code.words)
    assert code.length == len(sequence) and code.num_tokens == len(coder.tokenize(sequence)) + 1
    assert code.model_bits <= code.num_bits


def test_canonical_tokens_are_in_the_alphabet(coder: LMiCCoder) -> None:
    for sequence in (list(range(256)), list(range(255, -1, -1)), RANDOM_128):
        ids = coder.tokenize(sequence)
        assert coder.tokenizer.decode(ids) == " ".join(map(str, sequence))


def test_deterministic_whatever_the_callers_threads(coder: LMiCCoder) -> None:
    sequence = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        first = coder.encode(sequence)
        torch.set_num_threads(1)
        second = coder.encode(sequence)
    finally:
        torch.set_num_threads(threads)
    assert np.array_equal(first.words, second.words) and first.model_bits == second.model_bits
    assert torch.get_num_threads() == threads


@pytest.mark.slow
def test_small_windows_and_dna_grammar() -> None:
    """Windows of 16 tokens restart the model many times (mid-number too); max_value 7 allows one digit only; a
    two-character separator."""
    small = LMiCCoder(LMiCConfig(max_window_tokens=16, max_value=7))
    dna = DNA_128[-40:]
    code = small.encode(dna)
    assert small.decode(code) == dna
    assert code.num_tokens == 2 * len(dna)  # a digit and a separator each, EOS for the last separator
    with pytest.raises(ValueError, match=r"0\.\.7; item 1 is 8"):
        small.encode([1, 8])
    bytes_ = LMiCCoder(LMiCConfig(max_window_tokens=16, separator=", "))  # ",", then a forced space token
    bytes_code = bytes_.encode([200, 13, 255, 0, 99, 100, 7, 250, 251, 1])
    assert bytes_.decode(bytes_code) == [200, 13, 255, 0, 99, 100, 7, 250, 251, 1]


def test_lmic_bits_and_rate(coder: LMiCCoder) -> None:
    sequence = [10, 20, 30, 40]
    code = coder.encode(sequence)
    assert lmic_bits([sequence], LMiCConfig(), progress=False) == [code.num_bits]
    assert lmic_compression_rate(code) == code.num_bits / 32
    assert lmic_compression_rate(code, symbol_bits=3) == code.num_bits / 12


@pytest.mark.parametrize(
    ("sequence", "message"),
    [
        ([], "non-empty"),
        ([1, -1], r"0\.\.255; item 1 is -1"),
        ([256], r"0\.\.255; item 0 is 256"),
        ([1, 2.0], "item 1 is 2.0"),
        ([True], "item 0 is True"),
        (["7"], "item 0 is '7'"),
    ],
)
def test_bad_sequences(coder: LMiCCoder, sequence: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        coder.encode(sequence)


@pytest.mark.parametrize(
    ("changes", "field_name"),
    [
        ({"separator": ""}, "separator"),
        ({"separator": "1"}, "separator"),
        ({"max_value": 256}, "max_value"),
        ({"num_threads": 0}, "num_threads"),
        ({"dtype": "float16"}, "dtype"),
    ],
)
def test_bad_config(changes: dict, field_name: str) -> None:
    with pytest.raises(ValueError, match=field_name):
        LMiCConfig(**changes)


def test_corrupt_code_stops(coder: LMiCCoder) -> None:
    code = coder.encode([100, 101, 102])
    truncated = LMiCCode(code.words, code.num_bits, code.model_bits, num_tokens=3, length=code.length)
    with pytest.raises(ValueError, match="corrupt"):
        coder.decode(truncated)


def test_numpy_ints(coder: LMiCCoder) -> None:
    sequence = np.array([5, 250, 0], dtype=np.uint8)
    assert coder.decode(coder.encode(sequence)) == [5, 250, 0]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["random", "regular"])
def test_round_trip_128(coder: LMiCCoder, codes: dict[str, LMiCCode], name: str) -> None:
    sequence = {"random": RANDOM_128, "regular": REGULAR_128}[name]
    assert coder.decode(codes[name]) == sequence


@pytest.mark.slow
def test_regular_codes_smaller_than_random(codes: dict[str, LMiCCode]) -> None:
    random_rate, regular_rate = (lmic_compression_rate(codes[name]) for name in ("random", "regular"))
    assert random_rate > 0.9  # the model cannot compress uniform bytes
    assert regular_rate < 0.5 * random_rate


@pytest.mark.slow
def test_round_trip_dna(coder: LMiCCoder) -> None:
    dna = DNA_128[:48]
    code = coder.encode(dna)
    assert coder.decode(code) == dna
    assert 1.0 < lmic_compression_rate(code, symbol_bits=3) < 2.0  # uniform over 8: nothing to gain, little lost
