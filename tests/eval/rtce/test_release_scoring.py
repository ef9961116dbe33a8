"""`eval.rtce.release_scoring`: the public release's verdicts, case by case (checked by hand against its
`check_pred`), on hostile text, and, where the release's git mirror is on this machine, against `check_pred` itself."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eval.rtce.release_scoring import RELEASE_STATUSES, ReleaseVerdict, release_status_counts, release_verdict

RELEASE_MIRROR = Path("/work/.mirror/Nickil21+round-trip-code-compression/repo")

# Reference values: x and the encoder's output (exact values do not matter, only that cases agree with them).
LZW_X, LZW_Z = "abab", [97, 98, 256]
RLE_X, RLE_Z = "aab", [["a", 2], ["b", 1]]
AE_X, AE_Z = "ab", 0.3125
HUF_X, HUF_FLAT = "aab", [1, 0, 1]
HUF_TUPLED = [[5], {"a": "0", "b": "1"}, 5]

Z, X = True, False  # predicts_z: an output task, an input task


def _case(id_: str, text: str | None, algorithm: str, predicts_z: bool, x: str, answer: Any, status: str) -> Any:
    return pytest.param(text, algorithm, predicts_z, x, answer, status, id=id_)


def lzw(id_: str, text: str | None, status: str) -> Any:
    return _case(id_, text, "lzw", Z, LZW_X, LZW_Z, status)


def rle(id_: str, text: str, status: str) -> Any:
    return _case(id_, text, "rle", Z, RLE_X, RLE_Z, status)


def ae(id_: str, text: str, status: str) -> Any:
    return _case(id_, text, "ae", Z, AE_X, AE_Z, status)


def huf(id_: str, text: str, status: str, answer: Any = HUF_TUPLED) -> Any:
    return _case(id_, text, "huffman", Z, HUF_X, answer, status)


def inp(id_: str, text: str, status: str, algorithm: str = "lzw", x: str = LZW_X) -> Any:
    return _case(id_, text, algorithm, X, x, x, status)


LZW_JSON = '{"output": [97, 98, 256]}'

CASES = [
    # -- extraction
    lzw("empty", "", "no answer"),
    lzw("none", None, "no answer"),
    lzw("blank", "  \n ", "no answer"),
    lzw("prose-only", "I think the answer is 42 or so.", "no answer"),
    lzw("plain-json", LZW_JSON, "correct"),
    lzw("answer-block-first", '{"output": [1]} [ANSWER]' + LZW_JSON + '[/ANSWER] then {"output": [2]}', "correct"),
    lzw("answer-tags-any-case", "[answer]" + LZW_JSON + "[/Answer]", "correct"),
    lzw("last-block-wins", "[ANSWER]" + LZW_JSON + '[/ANSWER][ANSWER]{"output": [1]}[/ANSWER]', "wrong"),
    lzw("block-without-dict-then-text", "[ANSWER]I don't know[/ANSWER] " + LZW_JSON, "correct"),
    lzw("right-to-left", '{"output": [1, 2]} no, corrected: ' + LZW_JSON, "correct"),
    lzw("later-dict-without-output", LZW_JSON + ' {"note": 1}', "correct"),
    lzw("apostrophe-in-prose-python-dict", "Let's see: {'output': [97, 98, 256]}", "correct"),
    lzw("double-quote-in-prose-hides-dict", 'He said "hi ' + LZW_JSON, "no answer"),
    lzw("double-braces", "{{" + LZW_JSON[1:-1] + "}}", "correct"),
    lzw("trailing-commas", '{"output": [97, 98, 256,],}', "correct"),
    lzw("python-tuple-in-dict", '{"output": (97, 98, 256)}', "correct"),
    lzw("key-any-case", '{"Output": [97, 98, 256]}', "correct"),
    lzw("bare-value", "[97, 98, 256]", "correct"),
    lzw("bare-value-in-block", "[ANSWER] [97, 98, 256] [/ANSWER]", "correct"),
    lzw("bare-null-is-nothing", "null", "no answer"),
    lzw("unbalanced-brace", '{"output": [97, 98, 256]' + "{" * 50, "no answer"),
    inp("smart-quotes", "{\u201coutput\u201d: \u201cabab\u201d}", "correct"),
    huf("python-constants", '{"output": [[5], {"a": "0", "b": "1"}, 5], "sure": True, "why": None}', "correct"),
    inp("truncated-string", '[ANSWER]{"output": "abab', "correct"),
    inp("truncated-string-next-key", '{"output": "abab", "explanation": "because', "correct"),
    ae("truncated-number", '{"output": 0.3125', "correct"),
    # -- output tasks: coercions and shapes
    ae("number-as-string", '{"output": "0.3125"}', "correct"),
    lzw("list-as-string", '{"output": "[97, 98, 256]"}', "correct"),
    lzw("tuple-as-string-rejected", '{"output": "(97, 98, 256)"}', "wrong"),
    lzw("integer-valued-floats", '{"output": [97.0, 98.0, 256.0]}', "correct"),
    lzw("fractional-float", '{"output": [97.5, 98, 256]}', "wrong"),
    lzw("ints-exact", '{"output": [97, 98, 257]}', "wrong"),
    lzw("string-output-wrong-shape", '{"output": "abab"}', "wrong"),
    lzw("null-output", '{"output": null}', "no answer"),
    ae("null-string-output", '{"output": "null"}', "no answer"),
    rle("float-counts", '{"output": [["a", 2.0], ["b", 1]]}', "correct"),
    rle("non-canonical-runs", '{"output": [["a", 1], ["a", 1], ["b", 1]]}', "correct"),
    rle("whole-input-one-run", '{"output": [["aab", 1]]}', "correct"),
    rle("zero-count", '{"output": [["a", 2], ["b", 0]]}', "wrong"),
    rle("wrong-runs", '{"output": [["a", 1], ["b", 1]]}', "wrong"),
    rle("huge-count", '{"output": [["a", 1000000000000000000000000000000]]}', "wrong"),
    rle("digit-chars-literal-evaluated", '{"output": [["1.0", 2], ["b", 1]]}', "wrong"),
    huf("flat", '{"output": [1, 0, 1]}', "correct", HUF_FLAT),
    huf("flat-wrong-shape", '{"output": {"bits": [1, 0, 1]}}', "wrong", HUF_FLAT),
    huf("tupled", '{"output": [[5], {"a": "0", "b": "1"}, 5]}', "correct"),
    huf("tupled-float-bytes", '{"output": [[5.0], {"a": "0", "b": "1"}, 5]}', "correct"),
    huf("tupled-codes-literal-evaluated", '{"output": [[5], {"a": "00", "b": "1"}, 5]}', "correct"),
    huf("tupled-code-differs", '{"output": [[5], {"a": "0", "b": "10"}, 5]}', "wrong"),
    huf("tupled-bytes-only", '{"output": [[5]]}', "wrong"),
    huf("tupled-not-a-list", '{"output": "0101"}', "wrong"),
    ae("fraction", '{"output": "5/16"}', "correct"),
    ae("fraction-call", '{"output": "Fraction(5, 16)"}', "correct"),
    ae("zero-denominator", '{"output": "5/0"}', "wrong"),
    ae("within-abs-tol", '{"output": 0.313}', "correct"),
    ae("outside-tol", '{"output": 0.314}', "wrong"),
    ae("infinity-accepted", '{"output": Infinity}', "correct"),
    ae("inf-string-accepted", '{"output": "inf"}', "correct"),
    ae("nan", '{"output": NaN}', "wrong"),
    ae("input-instead-of-float", '{"output": "ab"}', "wrong"),
    ae("list-wrong-shape", '{"output": [0.3125]}', "wrong"),
    _case("reference-wrong-type", LZW_JSON, "ae", Z, AE_X, "0.3125", "no answer"),
    # -- input tasks
    inp("input-exact", '{"output": "abab"}', "correct"),
    inp("ae-trailing-eof", '{"output": "abEOF"}', "correct", "ae", AE_X),
    inp("eof-only-for-ae", '{"output": "ababEOF"}', "wrong"),
    inp("unwrap-input-key", '{"output": {"input": "abab"}}', "correct"),
    inp("unwrap-single-key", '{"output": {"uncompressed": "abab"}}', "correct"),
    inp("unwrap-stringified-dict", "{\"output\": \"{'return': 'abab'}\"}", "correct"),
    inp("unwrap-two-keys-no-known", '{"output": {"a": "abab", "b": 1}}', "wrong"),
    inp("nested-output-dict", '{"result": {"output": "abab"}}', "wrong"),
    inp("number-stringified", '{"output": 123}', "correct", x="123"),
    inp("123-equals-123.0", '{"output": "123.0"}', "correct", x="123"),
    inp("leading-space-number", '{"output": " 123"}', "correct", x="123"),
    inp("hex-number", '{"output": "0xc"}', "correct", x="12"),
    inp("true-equals-1", '{"output": true}', "correct", x="1"),
    inp("quoted-string", '{"output": "\'abab\'"}', "correct"),
    inp("no-case-folding", '{"output": "ABAB"}', "wrong"),
    inp("no-trimming", '{"output": "abab "}', "wrong"),
    inp("list-stringified", '{"output": ["a", "b", "a", "b"]}', "wrong"),
]


@pytest.mark.parametrize(("text", "algorithm", "predicts_z", "x", "answer", "status"), CASES)
def test_release_verdicts(
    text: str | None, algorithm: str, predicts_z: bool, x: str, answer: Any, status: str
) -> None:
    verdict = release_verdict(text, algorithm=algorithm, predicts_z=predicts_z, x=x, answer=answer)
    assert verdict.status == status, verdict.reason
    assert verdict.status in RELEASE_STATUSES and verdict.reason
    if status == "no answer":
        assert verdict.predicted is None


def test_predicted_is_the_compared_value() -> None:
    """The value after the release's coercions: floats made ints, strings re-parsed, input predictions unwrapped."""
    assert release_verdict(
        '{"output": [97.0, 98, 256.0]}', algorithm="lzw", predicts_z=True, x=LZW_X, answer=LZW_Z
    ) == ReleaseVerdict("correct", [97, 98, 256], "output dict in the text; equal to the reference")
    assert (
        release_verdict('{"output": "5/16"}', algorithm="ae", predicts_z=True, x=AE_X, answer=AE_Z).predicted == "5/16"
    )
    assert release_verdict('{"output": {"input": 12}}', algorithm="rle", predicts_z=False, x="12", answer="12") == (
        ReleaseVerdict("correct", "12", "output dict in the text; equal to x")
    )
    rle_verdict = release_verdict(
        '[["a", 1], ["a", 1], ["b", 1]]', algorithm="rle", predicts_z=True, x=RLE_X, answer=RLE_Z
    )
    assert rle_verdict.reason == "bare value taken as the output; non-canonical RLE decodes to x"


def test_reference_not_mutated_and_tuples_read_as_lists() -> None:
    answer = [("a", 2.0), ("b", 1)]
    verdict = release_verdict(
        '{"output": [["a", 2], ["b", 1]]}', algorithm="rle", predicts_z=True, x="aab", answer=answer
    )
    assert verdict.status == "correct" and answer == [("a", 2.0), ("b", 1)]


def test_unknown_algorithm_raises() -> None:
    with pytest.raises(ValueError, match="unknown algorithm"):
        release_verdict(LZW_JSON, algorithm="LZW", predicts_z=True, x=LZW_X, answer=LZW_Z)


def test_status_counts() -> None:
    verdicts = [ReleaseVerdict("correct", 1, ""), ReleaseVerdict("wrong", 2, ""), ReleaseVerdict("correct", 1, "")]
    assert release_status_counts(verdicts) == {"correct": 2, "wrong": 1, "no answer": 0}


HOSTILE = [
    pytest.param("[" * 100_000, "lzw", "no answer", id="deep-brackets"),
    pytest.param("{" * 100_000, "lzw", "no answer", id="deep-braces"),
    pytest.param("}" * 100_000 + LZW_JSON, "lzw", "correct", id="stray-closing-braces"),
    pytest.param('{"output": ' + "[" * 900 + "]" * 900 + "}", "huffman", "wrong", id="deep-json-list"),
    pytest.param('{"output": "' + "[" * 100_000 + '"}', "lzw", "wrong", id="deep-list-in-string"),  # release raises
    pytest.param('{"output": "' + "1" * 5000 + '"}', "lzw", "wrong", id="5000-digit-string"),  # release raises
    pytest.param('{"output": "\uff11e9999999"}', "ae", "wrong", id="decimal-overflow"),  # release raises
    pytest.param('{"output": "1+2j"}', "ae", "wrong", id="complex-literal"),  # release raises writing it out
    pytest.param('{"output": "\ud800"}', "lzw", "wrong", id="lone-surrogate"),
    pytest.param("[ANSWER]\udfff[/ANSWER]", "lzw", "no answer", id="lone-surrogate-block"),
    pytest.param("-" * 100_000 + "1", "lzw", "no answer", id="deep-unary"),
    pytest.param("[ANSWER]" * 250_000, "lzw", "no answer", id="open-tags-2mb"),
    pytest.param("lorem {a} [x] 'q' " * 110_000 + LZW_JSON, "lzw", "correct", id="2mb-prose-then-answer"),
    pytest.param('{"output": "' + "a" * 2_000_000, "lzw", "wrong", id="2mb-truncated-string"),
    pytest.param("{output:1}" * 200_000, "lzw", "no answer", id="2mb-junk-dicts"),
]


@pytest.mark.parametrize(("text", "algorithm", "status"), HOSTILE)
def test_hostile_text_gets_a_verdict_quickly(text: str, algorithm: str, status: str) -> None:
    answer = HUF_TUPLED if algorithm == "huffman" else AE_Z if algorithm == "ae" else LZW_Z
    start = time.perf_counter()
    verdict = release_verdict(text, algorithm=algorithm, predicts_z=True, x=LZW_X, answer=answer)
    assert time.perf_counter() - start < 20
    assert verdict.status == status, verdict.reason


@pytest.fixture(scope="module")
def release_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The release's scorer, extracted from its git mirror into a temporary package (skip without the mirror)."""
    if not RELEASE_MIRROR.is_dir():
        pytest.skip(f"no release mirror at {RELEASE_MIRROR}")
    root = tmp_path_factory.mktemp("release")
    (root / "core").mkdir()
    (root / "core" / "__init__.py").write_text("")
    for source, target in (
        ("src/eval/check_io_pred_acc_mp.py", "eval_release.py"),
        ("src/core/utils.py", "core/utils.py"),
    ):
        shown = subprocess.run(
            ["git", "-C", str(RELEASE_MIRROR), "show", f"HEAD:{source}"], capture_output=True, text=True, check=False
        )
        if shown.returncode != 0:
            pytest.skip(f"cannot read {source} from the mirror: {shown.stderr.strip()}")
        (root / target).write_text(shown.stdout)
    saved_path, saved_modules = (
        list(sys.path),
        {k: sys.modules.pop(k) for k in ("core", "core.utils") if k in sys.modules},
    )
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("eval_release")
    finally:
        sys.path[:] = saved_path
    yield module
    for name in ("eval_release", "core", "core.utils"):
        sys.modules.pop(name, None)
    sys.modules.update(saved_modules)


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@pytest.mark.parametrize(("text", "algorithm", "predicts_z", "x", "answer", "status"), CASES)
def test_same_as_release_check_pred(
    release_module: Any, text: str | None, algorithm: str, predicts_z: bool, x: str, answer: Any, status: str
) -> None:
    """Every table case through the release's own `check_pred`: the same status and the same predicted value."""
    assert predicts_z or answer == x
    item = {
        "io_pred": "output_execution_prediction" if predicts_z else "input_execution_prediction",
        "itemid": 0,
        "ioid": 0,
        "output": text,
    }
    parsed_ios = {0: {"ios": [{"input": x, "output": json.loads(json.dumps(answer)) if predicts_z else None}]}}
    theirs = release_module.check_pred(item, algorithm, parsed_ios)
    ours = release_verdict(text, algorithm=algorithm, predicts_z=predicts_z, x=x, answer=answer)
    assert (ours.status, theirs["status"]) == (status, status), theirs["message"]
    if status != "no answer":
        safe = release_module._json_safe(ours.predicted)
        assert theirs["predicted"] == (json.dumps(safe, ensure_ascii=True) if safe is not None else None)
