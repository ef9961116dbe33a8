"""The four RTCE compression algorithms: round trips, hand-worked reference outputs, and source texts."""

from __future__ import annotations

import copy
import random
import string
from fractions import Fraction
from typing import Any

import pytest

from tracegen.algorithms import ALGORITHMS, ae_roundtrips, get_algorithm, huffman, lzw, rle
from tracegen.algorithms import arithmetic as ae

YAML_TEXT = "server:\n  host: localhost\n  port: 8080\nlogging:\n  level: debug\n"
CSV_TEXT = "id,name,score\n1,alice,90\n2,bob,85\n3,carol,77\n"
LOG_TEXT = "2024-01-01 12:00:00 INFO start\n2024-01-01 12:00:01 WARN slow disk\n"


def _random_texts() -> list[str]:
    rng = random.Random(1234)
    alphabet = string.printable[:95] + "\n\t"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 120))) for _ in range(25)]


EDGE_CASES = [
    "",
    "x",
    "ab",
    "aaabcc",
    "héllo wörld ÿ",
    "日本語のテキスト",
    "emoji 🙂🚀🙂 mixed 中文 text",
    "a" * 1000,
    "ab" * 300,
    YAML_TEXT,
    CSV_TEXT,
    LOG_TEXT,
    *_random_texts(),
]


def run_source(source: str, argument: Any) -> Any:
    """Execute our own trusted main_solution source and call it on a copy of `argument`."""
    namespace: dict[str, Any] = {}
    exec(compile(source, "<main_solution>", "exec"), namespace)
    return namespace["main_solution"](copy.deepcopy(argument))


def test_registry() -> None:
    assert list(ALGORITHMS) == ["lzw", "ae", "rle", "huffman"]
    for name, alg in ALGORITHMS.items():
        assert get_algorithm(name) is alg and alg.name == name and alg.description.endswith(".")
    assert [a.name for a in ALGORITHMS.values() if a.needs_freq] == ["ae", "huffman"]
    with pytest.raises(ValueError, match="unknown algorithm"):
        get_algorithm("zip")


@pytest.mark.parametrize("name", ["lzw", "rle", "huffman"])
@pytest.mark.parametrize("text", EDGE_CASES)
def test_round_trip(name: str, text: str) -> None:
    alg = ALGORITHMS[name]
    assert alg.exact(text)
    assert alg.decode(alg.encode(text), alg.freq(text)) == text


@pytest.mark.parametrize("text", EDGE_CASES)
def test_ae_round_trip_or_marked(text: str) -> None:
    alg = ALGORITHMS["ae"]
    freq = alg.freq(text)
    if alg.exact(text):
        assert alg.decode(alg.encode(text), freq) == text
    else:  # marked: float decoding raises or yields another text
        try:
            decoded: str | None = alg.decode(alg.encode(text), freq)
        except ValueError:
            decoded = None
        assert decoded != text
    assert ae.decode_exact(ae.encode_exact(text), ae.ae_freq(text)) == text


@pytest.mark.parametrize("text", ["", "x", "ab", "aaabcc", "日本🙂", "a" * 1000, "abc" * 10])
def test_float_ae_round_trips_on_short_or_repetitive_text(text: str) -> None:
    assert ae_roundtrips(text)
    assert ae.decode(ae.encode(text), ae.ae_freq(text)) == text


def test_float_ae_breaks_and_fraction_ae_does_not() -> None:
    assert ae.first_failing_length("ab", seed=0) == 47
    assert ae.first_failing_length(string.printable[:95], seed=0) == 13
    broken = [text for text in (YAML_TEXT, CSV_TEXT, LOG_TEXT, *_random_texts()) if not ae_roundtrips(text)]
    assert len(broken) >= 20
    for text in broken:
        code = ae.encode_exact(text)
        assert isinstance(code, Fraction) and 0 < code < 1
        assert ae.decode_exact(code, ae.ae_freq(text)) == text
        assert ae.information_bits(text) > 50


def test_lzw_reference() -> None:
    codes = [84, 79, 66, 69, 79, 82, 78, 79, 84, 256, 258, 260, 265, 259, 261, 263]
    assert lzw.encode("TOBEORNOTTOBEORTOBEORNOT") == codes
    assert lzw.decode(codes) == "TOBEORNOTTOBEORTOBEORNOT"
    assert lzw.encode("aaaa") == [97, 256, 97]  # "a", "aa" (code 256), "a"
    assert lzw.decode([97, 256]) == "aaa"  # the cScSc case: code 256 is not yet in the dictionary
    assert lzw.encode("é") == [195, 169]  # UTF-8 bytes
    assert lzw.encode("") == [] and lzw.decode([]) == ""
    with pytest.raises(ValueError, match="Bad compressed k"):
        lzw.decode([97, 300])


def test_rle_reference() -> None:
    assert rle.encode("aaabcc") == [("a", 3), ("b", 1), ("c", 2)]
    assert rle.encode("") == []
    assert ALGORITHMS["rle"].to_json(rle.encode("aaabcc")) == [["a", 3], ["b", 1], ["c", 2]]
    assert rle.decode([("x", 2), ("y", 0), ("z", 1)]) == "xxz"


def test_huffman_reference() -> None:
    # "aab": heap [a:2, b:1] heapifies to [b, a]; b is popped first (left, '0'), a second (right, '1').
    # bits "1" "1" "0" -> "110" + 5 zero bits = 0b11000000 = 192.
    assert huffman.encode("aab") == ([192], {"b": "0", "a": "1"}, 5)
    # "abc": all counts 1; heapify moves c to the root ([c, b, a]), so c and b merge first, then a with (c, b):
    # a '0', c '10', b '11'; bits "0" "11" "10" -> "01110" + 3 zero bits = 0b01110000 = 112.
    assert huffman.encode("abc") == ([112], {"a": "0", "c": "10", "b": "11"}, 3)
    assert huffman.encode("aaa") == ([0], {"a": "0"}, 5)  # one symbol: code '0'
    assert huffman.decode(([0], {"a": "0"}, 5), {"a": 3}) == "aaa"
    assert huffman.encode("") == ([], {}, 0) and huffman.decode(([], {}, 0), {}) == ""
    assert huffman.encode("abcdefgh")[2] == 0  # 8 symbols x 3 bits: no padding
    z = huffman.encode(CSV_TEXT)
    assert (len(z[0]) * 8 - z[2]) == sum(len(z[1][c]) for c in CSV_TEXT) and 0 <= z[2] < 8


def test_ae_reference() -> None:
    # freq {'a': 1, 'b': 1, 'EOF': 1}, total 3, sorted symbols EOF < a < b with cumulative counts 0, 1, 2.
    # 'a' -> [1/3, 2/3); 'b' -> [1/3 + 2/9, 2/3) = [5/9, 2/3); EOF -> [5/9, 5/9 + 1/27) = [15/27, 16/27).
    # Midpoint 31/54.
    assert ae.ae_freq("ab") == {"a": 1, "b": 1, "EOF": 1}
    assert ae.encode_exact("ab") == Fraction(31, 54)
    assert ae.encode("ab") == pytest.approx(31 / 54, abs=1e-15)
    assert ae.decode(31 / 54, {"a": 1, "b": 1, "EOF": 1}) == "ab"
    assert ae.encode("") == 0.5 and ae.decode(0.5, {"EOF": 1}) == ""
    with pytest.raises(ValueError):
        ae.decode(0.5, {"a": 1})  # no EOF
    with pytest.raises(ValueError):
        ae.decode(0.5, None)


def test_freq_dict_first_occurrence_order_and_injection() -> None:
    assert list(ALGORITHMS["huffman"].freq("banana")) == ["b", "a", "n"]
    assert ALGORITHMS["ae"].freq("banana") == {"b": 1, "a": 3, "n": 2, "EOF": 1}
    assert list(ALGORITHMS["ae"].freq("banana")) == ["b", "a", "n", "EOF"]
    for name, expected in [("huffman", "{'b': 1, 'a': 3, 'n': 2}"), ("ae", "{'b': 1, 'a': 3, 'n': 2, 'EOF': 1}")]:
        alg = ALGORITHMS[name]
        assert alg.encoder_template.count("FREQ_DICT") == alg.decoder_template.count("FREQ_DICT") == 1
        for source in (alg.encoder_source(alg.freq("banana")), alg.decoder_source(alg.freq("banana"))):
            assert f"    freq = {expected}\n" in source and "FREQ_DICT" not in source
    newline = ALGORITHMS["huffman"].encoder_source(ALGORITHMS["huffman"].freq("a\nb'"))
    assert "freq = {'a': 1, '\\n': 1, 'b': 1, \"'\": 1}" in newline
    for name in ("lzw", "rle"):
        alg = ALGORITHMS[name]
        assert alg.freq("abc") is None and alg.encoder_source(None) == alg.encoder_template
        assert alg.decoder_source({"a": 1}) == alg.decoder_template and "FREQ_DICT" not in alg.encoder_template
    with pytest.raises(ValueError):
        ALGORITHMS["ae"].encoder_source(None)


@pytest.mark.parametrize("name", list(ALGORITHMS))
@pytest.mark.parametrize("text", EDGE_CASES)
def test_sources_match_plain_functions(name: str, text: str) -> None:
    alg = ALGORITHMS[name]
    freq = alg.freq(text)
    encoder, decoder = alg.encoder_source(freq), alg.decoder_source(freq)
    assert encoder.startswith("def main_solution(uncompressed):\n")
    assert decoder.startswith("def main_solution(compressed):\n")
    z = alg.encode(text)
    from_source = run_source(encoder, text)
    assert from_source == z and type(from_source) is type(z)
    if alg.exact(text):  # the float AE decoder listing may loop forever on a code it cannot decode
        assert run_source(decoder, z) == alg.decode(z, freq) == text


@pytest.mark.parametrize("name", list(ALGORITHMS))
@pytest.mark.parametrize("text", ["", "aaabcc", "日本🙂", YAML_TEXT])
def test_json_form_decodes(name: str, text: str) -> None:
    alg = ALGORITHMS[name]
    z = alg.encode(text)
    as_json = alg.to_json(z)
    assert alg.from_json(as_json) == z
    if alg.exact(text):
        assert alg.decode(alg.from_json(as_json), alg.freq(text)) == text


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("lzw", "abc"),
        ("lzw", [1, "2"]),
        ("lzw", [True]),
        ("ae", [0.5]),
        ("ae", "0.5"),
        ("rle", [["a"]]),
        ("rle", [["a", "3"]]),
        ("rle", {"a": 3}),
        ("huffman", [[1], {}]),
        ("huffman", [[256], {}, 0]),
        ("huffman", [[1], {}, 8]),
        ("huffman", [[1], [], 0]),
    ],
)
def test_from_json_rejects_bad_shapes(name: str, bad: Any) -> None:
    with pytest.raises(ValueError):
        ALGORITHMS[name].from_json(bad)


def test_round_trips_on_all_250_benchmark_inputs() -> None:
    """LZW, RLE, Huffman and exact AE round-trip every benchmark input; float AE does exactly where it says so."""
    from tracegen.inputs import generate_inputs

    items = generate_inputs(seed=42, num_inputs=250)
    assert len(items) == 250
    for item in items:
        x = item.text
        for name in ("lzw", "rle", "huffman"):
            algorithm = ALGORITHMS[name]
            assert algorithm.decode(algorithm.encode(x), algorithm.freq(x)) == x, (name, item.id)
        assert ae.decode_exact(ae.encode_exact(x), ae.ae_freq(x)) == x, item.id
        float_ae = ALGORITHMS["ae"]
        try:
            decoded = float_ae.decode(float_ae.encode(x), float_ae.freq(x))
        except ValueError:
            decoded = None
        assert float_ae.exact(x) == (decoded == x), item.id


def test_every_algorithm_states_its_facts_once_on_its_record() -> None:
    """Labels, the paper's column order and the prompt facts come from the registry; a paper prompt of each
    algorithm says its own answer type, and no algorithm falls back to a generic one."""
    from tracegen.algorithms import PAPER_ORDER, algorithm_label, algorithms_for
    from tracegen.tasks import Task, task_prompt

    assert PAPER_ORDER == ("ae", "lzw", "rle", "huffman")
    assert [algorithm_label(name) for name in PAPER_ORDER] == ["AE", "LZW", "RLE", "HUFFMAN"]
    for target in ("triple", "bytes"):
        for algorithm in algorithms_for(target).values():
            facts = algorithm.prompt
            assert facts.z_type and facts.z_text and facts.answer_type and facts.blind_names
            prompt = task_prompt(algorithm, Task.OUTPUT_PRED, "abc", algorithm.freq("abc"))
            assert f'The "output" value must be of type: {facts.answer_type}.' in prompt
            assert f"`return` ({facts.z_type}): {facts.z_text}" in prompt
