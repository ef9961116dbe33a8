"""Score RTCE completions as the public release's scorer does (`src/eval/check_io_pred_acc_mp.py`, `check_pred`
with its default `float_tol=1e-3`): the same verdict ("correct", "wrong", "no answer") and the same compared value.

This is an independent reimplementation of that scorer's verdict logic. Its leniencies, all reproduced:

Extraction (the first step that finds something wins; nothing found: "no answer"):
- candidates: the last `[ANSWER]...[/ANSWER]` block (tags in any case), then the whole text;
- balanced-brace dict scan: every top-level `{...}` (braces inside quoted strings skipped), right to left; a double
  quote always opens a string, a single quote only inside braces (apostrophes in prose do not);
- double-brace collapse: `{{...}}` (the whole snippet, blanks around it allowed) is read as `{...}`;
- each snippet is parsed as JSON, then as repaired JSON (smart quotes made plain, Python `None`/`True`/`False`
  outside strings made JSON, trailing commas dropped), then as a Python literal (made JSON-like: tuples become
  lists, keys strings); a result of None (JSON `null`) counts as nothing parsed;
- the `"output"` key is matched exactly, else case-insensitively (`key.lower() == "output"`);
- bare value: a block (else the whole text) that parses to anything but an `output` dict is taken as the output;
- truncated-answer salvage: after the last `"output":` (any case, either quote), the rest parsed as above, or a
  quoted string cut off (up to its closing quote, a `\\n[/ANSWER]`, a `\\n```` or the next `, "key":`).

Output tasks (predict z):
- numbers as strings: a string prediction is re-parsed as JSON, else as a Python literal (`"[1, 2]"` is a list;
  `"null"` is None);
- shape validators: LZW a list of ints, RLE a list of `[str, positive int]` pairs (tuples too), AE a number or a
  string, Huffman like the reference (a flat list of ints, or a list whose first element is a list of ints, else the
  reference's type); integer-valued floats are made ints (`256.0` -> 256); a wrong shape is "wrong", or
  "no answer" when the prediction is None;
- AE: compared as Decimals; strings may be decimals, `"a/b"` or `"Fraction(a, b)"`; equal within
  `max(1e-3 * max(|a|, |b|), 1e-3)` (so an infinite prediction, `Infinity` or `"inf"`, is always correct); values
  that do not parse (or NaN) are compared as stripped strings;
- RLE: a non-canonical run list (`[["s", 1], ["s", 1]]`, or even `[[x, 1]]`) is correct when it decodes to x.

- a reference of the wrong type (an AE output that is not a number, an input that is not a string): "no answer".

Input tasks (predict x):
- dict unwrap: a dict prediction gives its `return`, `input` or `output` value (the first present), or the value of a
  single-key dict; a string holding a dict (JSON or Python) is parsed and unwrapped the same way, once;
- a prediction that is not a string is stringified (`str`, so `[1, 2]` is `"[1, 2]"` and null is `"None"`);
- AE: a prediction ending in `"EOF"` is also tried without it.

Comparison (`deep_equal`, both tasks but AE output):
- both sides, at every level, go through `ast.literal_eval` when they are strings (kept as is when that fails): so
  `"123"` equals `"123.0"` and `" 123"`, `"'abc'"` equals `"abc"`, `"00"` equals `"0"`, and `"True"` equals `"1"`;
- tuples are lists; ints compare exactly, other numbers with `math.isclose` (rel and abs 1e-3); lists by length and
  item; dicts by key set (keys as they are) and value; anything else with `==`: no case folding, no trimming.

Where this module departs from the release, on purpose:
- work is bounded: `ast.literal_eval` is tried only on snippets of at most `LITERAL_EVAL_MAX_CHARS` characters
  (longer ones count as not a literal) and on the last `LITERAL_EVAL_MAX_SPANS` candidate brace spans of a text;
  a brace span is a candidate only if it could hold an `output` key (a colon, and a backslash or the letters
  o, u, t, p); the release's quadratic `[ANSWER]` search is linear here. Verdicts differ only past these caps.
- where the release raises (e.g. `json.loads` of a string prediction nested too deep or holding an int of over 4,300
  digits, a Decimal overflow, recursion in the comparison), this module does not: a failed parse is a failed parse,
  and a comparison that fails is "wrong"; so is a prediction the release cannot write out (a set, bytes or a
  complex number from a Python literal: its `json.dumps` of the result raises).
- the reference is read as JSON would give it (tuples as lists), as the release reads its data files.
"""

from __future__ import annotations

import ast
import json
import math
import re
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, DecimalException
from typing import Any

from tracegen.release import RELEASE_ALGORITHMS

RELEASE_STATUSES = ("correct", "wrong", "no answer")
FLOAT_TOL = 1e-3
LITERAL_EVAL_MAX_CHARS = 200_000  # longer snippets are not tried as Python literals
LITERAL_EVAL_MAX_SPANS = 1_000  # brace spans of one text tried as Python literals (the last ones)

_OPEN_TAG = re.compile(r"\[ANSWER\]", re.IGNORECASE)
_CLOSE_TAG = re.compile(r"\[/ANSWER\]", re.IGNORECASE)
_OUTPUT_KEY = re.compile(r"[\"']output[\"']\s*:\s*", re.IGNORECASE)
_TRUNCATION_END = re.compile(r"\n\[/ANSWER\]|\n```|,\s*[\"']\w+[\"']\s*:\s*")
_BRACE_OR_QUOTE = re.compile(r"[{}\"']")
_ESCAPE_OR_QUOTE = {q: re.compile(rf"[\\{q}]") for q in ("'", '"')}
# A quoted string (possibly unterminated) or a bare Python constant that is not part of a longer word.
_STRING_OR_CONSTANT = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*"?|\'[^\'\\]*(?:\\.[^\'\\]*)*\'?|(?<!\w)(?:None|True|False)(?!\w)', re.DOTALL
)
_JSON_CONSTANTS = {"None": "null", "True": "true", "False": "false"}
_TRAILING_COMMA = re.compile(r",\s*(?=[}\]])")
_SMART_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})
_FRACTION = re.compile(r"(-?\d+)\s*/\s*(-?\d+)")
_FRACTION_CALL = re.compile(r"Fraction\s*\(\s*(-?\d+)\s*,\s*(-?\d+)\s*\)")
_NOTHING = object()


@dataclass(frozen=True)
class ReleaseVerdict:
    """The release's verdict on one completion, the value it compared and why."""

    status: str  # one of RELEASE_STATUSES
    predicted: Any  # the value the release would compare (after its coercions); None for "no answer"
    reason: str


# ---------------------------------------------------------------- parsing


def _json(text: str) -> Any:
    """`json.loads`, or `_NOTHING` on any failure."""
    try:
        return json.loads(text)
    except Exception:
        return _NOTHING


def _literal(text: str) -> Any:
    """`ast.literal_eval` on snippets up to the size cap, or `_NOTHING` on any failure."""
    if len(text) > LITERAL_EVAL_MAX_CHARS:
        return _NOTHING
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings ("invalid decimal literal") of model text
            return ast.literal_eval(text)
    except Exception:
        return _NOTHING


def _repair(text: str) -> str:
    """Smart quotes to plain, Python constants outside strings to JSON, trailing commas dropped."""
    text = text.translate(_SMART_QUOTES)
    text = _STRING_OR_CONSTANT.sub(lambda m: _JSON_CONSTANTS.get(m.group(), m.group()), text)
    return _TRAILING_COMMA.sub("", text)


def _jsonish(snippet: str, literal: bool = True) -> Any:
    """JSON, repaired JSON, or (`literal`) a Python literal made JSON-like; None when nothing parses (or it parses
    to null)."""
    value = _json(snippet)
    if value is _NOTHING:
        value = _json(_repair(snippet))
    if value is not _NOTHING:
        return value
    value = _literal(snippet) if literal else _NOTHING
    if value is _NOTHING:
        return None
    try:
        return json.loads(json.dumps(value))
    except Exception:
        return None


def _collapse_double_braces(snippet: str) -> str:
    """`{{...}}` (the whole snippet, blanks around it allowed) read as `{...}`."""
    core = snippet.strip()
    if len(core) >= 4 and core.startswith("{{") and core.endswith("}}"):
        return "{" + core[2:-2] + "}"
    return snippet


def _string_end(text: str, start: int, quote: str) -> int | None:
    """Index of the quote closing a string whose body starts at `start` (backslash escapes), or None."""
    finder = _ESCAPE_OR_QUOTE[quote]
    pos = start
    while (m := finder.search(text, pos)) is not None:
        if m.group() == quote:
            return m.start()
        pos = m.start() + 2
    return None


def _top_level_brace_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every top-level balanced `{...}`, skipping braces in strings (`'` opens one only in braces)."""
    spans: list[tuple[int, int]] = []
    depth, start, pos = 0, 0, 0
    while (m := _BRACE_OR_QUOTE.search(text, pos)) is not None:
        ch, i = m.group(), m.start()
        pos = i + 1
        if ch == '"' or (ch == "'" and depth > 0):
            close = _string_end(text, i + 1, ch)
            if close is None:
                break  # an unterminated string runs to the end
            pos = close + 1
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    return spans


def _could_hold_output_key(snippet: str) -> bool:
    """False only when no parse of `snippet` can give a dict with an `output` key: no colon, or no escape and some
    letter of `output` missing."""
    low = snippet.lower()
    return ":" in snippet and ("\\" in snippet or all(letter in low for letter in "outp"))


def _last_output_dict(text: str) -> Any:
    """The `output` value of the last top-level dict that has one (key in any case), or `_NOTHING`."""
    tried = 0
    for start, end in reversed(_top_level_brace_spans(text)):
        fragment = text[start:end]
        if not _could_hold_output_key(fragment):
            continue
        tried += 1
        obj = _jsonish(_collapse_double_braces(fragment), literal=tried <= LITERAL_EVAL_MAX_SPANS)
        if not isinstance(obj, dict):
            continue
        if "output" in obj:
            return obj["output"]
        for key, value in obj.items():
            if isinstance(key, str) and key.lower() == "output":
                return value
    return _NOTHING


def _last_answer_block(text: str) -> str | None:
    """The body of the last complete `[ANSWER]...[/ANSWER]` block (non-greedy, tags in any case), or None."""
    last, pos = None, 0
    while (opening := _OPEN_TAG.search(text, pos)) is not None:
        closing = _CLOSE_TAG.search(text, opening.end())
        if closing is None:
            break
        last, pos = text[opening.end() : closing.start()], closing.end()
    return last


def _salvage_truncated(candidate: str) -> Any:
    """The value after the last `"output":` of a cut-off answer, or `_NOTHING`."""
    match = None
    for match in _OUTPUT_KEY.finditer(candidate):  # noqa: B007 (the last one is wanted)
        pass
    if match is None:
        return _NOTHING
    tail = candidate[match.end() :].lstrip()
    if not tail:
        return _NOTHING
    parsed = _jsonish(tail)
    if parsed is not None:
        return parsed
    if tail[0] not in "\"'":
        return _NOTHING
    body = tail[1:]
    close = _string_end(body, 0, tail[0])
    if close is not None:
        body = body[:close]
    end = _TRUNCATION_END.search(body)
    body = (body[: end.start()] if end else body).rstrip()
    return body if body else _NOTHING


def _extract(text: str) -> tuple[Any, str]:
    """The release's `output` value and how it was found; `_NOTHING` when there is none."""
    block = _last_answer_block(text)
    if block is not None:
        value = _last_output_dict(_collapse_double_braces(block.strip()))
        if value is not _NOTHING:
            return value, "output dict in the last [ANSWER] block"
    value = _last_output_dict(_collapse_double_braces(text))
    if value is not _NOTHING:
        return value, "output dict in the text"
    candidates = ([block.strip()] if block is not None else []) + [text.strip()]
    wrapped: Any = _NOTHING
    for candidate in candidates:
        obj = _jsonish(_collapse_double_braces(candidate))
        if obj is None:
            continue
        if isinstance(obj, dict) and "output" in obj:
            return obj["output"], "output dict as the whole answer"
        if wrapped is _NOTHING:
            wrapped = obj
    if wrapped is not _NOTHING:
        return wrapped, "bare value taken as the output"
    for candidate in candidates:
        value = _salvage_truncated(candidate)
        if value is not _NOTHING:
            return value, "output salvaged from a truncated answer"
    return _NOTHING, "no JSON object with output"


# ---------------------------------------------------------------- shapes


class _Shape(Exception):
    """A prediction (or reference) of the wrong type or shape."""


def _ints(value: Any, what: str) -> None:
    """A list of ints; integer-valued floats made ints in place, up to the first bad element."""
    if not isinstance(value, list):
        raise _Shape(f"{what}: expected a list of ints, got {type(value).__name__}")
    for i, item in enumerate(value):
        if isinstance(item, float) and item.is_integer():
            value[i] = int(item)
        elif not isinstance(item, int):
            raise _Shape(f"{what}: element {i} is not an int")


def _pairs(value: Any, what: str) -> None:
    """A list of `[str, positive int]` pairs (tuples too); integer-valued float counts made ints in place."""
    if not isinstance(value, list):
        raise _Shape(f"{what}: expected a list of pairs, got {type(value).__name__}")
    for i, pair in enumerate(value):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise _Shape(f"{what}: element {i} is not a pair")
        char, count = pair
        if not isinstance(char, str):
            raise _Shape(f"{what}: element {i} has a non-string character")
        if isinstance(count, float) and count.is_integer():
            count = int(count)
            value[i] = [char, count]
        if not isinstance(count, int) or count <= 0:
            raise _Shape(f"{what}: element {i} has no positive int count")


def _check_prediction(algorithm: str, pred: Any, expected: Any) -> None:
    """The release's shape validator of an output prediction."""
    if algorithm == "lzw":
        _ints(pred, "LZW output")
    elif algorithm == "rle":
        _pairs(pred, "RLE output")
    elif algorithm == "ae":
        if not isinstance(pred, (int, float, str)):
            raise _Shape(f"AE output: expected a number or a string, got {type(pred).__name__}")
    elif isinstance(expected, list) and all(isinstance(t, int) for t in expected):
        _ints(pred, "Huffman output")
    elif (
        isinstance(expected, list)
        and expected
        and isinstance(expected[0], list)
        and all(isinstance(t, int) for t in expected[0])
    ):
        if not isinstance(pred, list) or not pred:
            raise _Shape("Huffman output: expected a list whose first element is a list of ints")
        _ints(pred[0], "Huffman output's first element")
    elif not isinstance(pred, type(expected)):
        raise _Shape(f"Huffman output: expected {type(expected).__name__}, got {type(pred).__name__}")


def _check_reference(algorithm: str, expected: Any) -> None:
    """The release's check of an output reference (a dataset issue when it fails)."""
    if algorithm == "lzw":
        _ints(expected, "LZW reference")
    elif algorithm == "rle":
        _pairs(expected, "RLE reference")
    elif algorithm == "ae":
        if not isinstance(expected, (int, float)):
            raise _Shape("AE reference: expected a number")
    elif not isinstance(expected, list):
        raise _Shape("Huffman reference: expected a list")


# ---------------------------------------------------------------- comparison


def _maybe_literal(value: Any) -> Any:
    """A string as a Python literal when it is one, else unchanged."""
    if isinstance(value, str):
        parsed = _literal(value)
        return value if parsed is _NOTHING else parsed
    return value


def _lists(value: Any) -> Any:
    """A copy with tuples as lists, recursively (dict keys kept)."""
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    return value


def _deep_equal(a: Any, b: Any) -> bool:
    """The release's `deep_equal`: literal-evaluated strings, ints exact, floats within 1e-3, lists and dicts."""
    a, b = _lists(_maybe_literal(a)), _lists(_maybe_literal(b))
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=FLOAT_TOL, abs_tol=FLOAT_TOL)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_deep_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _ae_decimal(value: Any) -> Decimal | None:
    """An AE value as a Decimal: a decimal literal, `a/b` or `Fraction(a, b)`; None when it is none of them."""
    text = str(value).strip()
    try:
        return Decimal(text)
    except DecimalException:
        pass
    match = _FRACTION.fullmatch(text) or _FRACTION_CALL.fullmatch(text)
    if match is None or int(match.group(2)) == 0:
        return None
    return Decimal(int(match.group(1))) / Decimal(int(match.group(2)))


def _ae_equal(pred: Any, expected: Any) -> bool:
    """The release's AE output comparison: Decimals within `max(1e-3 * scale, 1e-3)`, else stripped strings."""
    a, b = _ae_decimal(pred), _ae_decimal(expected)
    if a is None or b is None or a.is_nan() or b.is_nan():
        return str(pred).strip() == str(expected).strip()
    if a == b:
        return True
    scale = max(abs(a), abs(b))
    if scale == 0:
        return True
    tol = Decimal(str(FLOAT_TOL))
    return abs(a - b) <= max(tol * scale, tol)


def _rle_decodes_to(pairs: list[Any], x: str) -> bool:
    """Whether validated (char, count) runs decode to x (lengths checked first, so huge counts cost nothing)."""
    if any(count > sys.maxsize for _, count in pairs):
        return False  # the release's `char * count` raises
    if sum(len(char) * count for char, count in pairs) != len(x):
        return False
    return "".join(char * count for char, count in pairs) == x


def _reparse(text: str) -> Any:
    """A string prediction as JSON, else as a Python literal, else `_NOTHING`."""
    value = _json(text)
    return _literal(text) if value is _NOTHING else value


def _unwrap(obj: Any) -> Any:
    """The `return`/`input`/`output` value of a dict (the first present), or a single key's value; else None."""
    if not isinstance(obj, dict):
        return None
    for key in ("return", "input", "output"):
        if key in obj:
            return obj[key]
    return next(iter(obj.values())) if len(obj) == 1 else None


def _judge_input(pred: Any, algorithm: str, expected: str) -> ReleaseVerdict:
    """An input-task prediction: unwrap, stringify, compare (and the AE `EOF` fallback)."""
    unwrapped = _unwrap(pred)
    if unwrapped is not None:
        pred = unwrapped
    if isinstance(pred, str):
        unwrapped = _unwrap(_reparse(pred))
        if unwrapped is not None:
            pred = unwrapped
    if not isinstance(pred, str):
        pred = str(pred)
    if _deep_equal(pred, expected):
        return ReleaseVerdict("correct", pred, "equal to x")
    if algorithm == "ae" and pred.endswith("EOF") and _deep_equal(pred[:-3], expected):
        return ReleaseVerdict("correct", pred, "equal to x once a trailing EOF is stripped")
    return ReleaseVerdict("wrong", pred, "differs from x")


def _judge_output(pred: Any, algorithm: str, expected: Any, x: str) -> ReleaseVerdict:
    """An output-task prediction: re-parse strings, validate the shape, compare (and the RLE fallback)."""
    if isinstance(pred, str):
        parsed = _reparse(pred)
        if parsed is not _NOTHING:
            pred = parsed
    try:
        _check_prediction(algorithm, pred, expected)
    except _Shape as e:
        return ReleaseVerdict("no answer" if pred is None else "wrong", pred, str(e))
    if _ae_equal(pred, expected) if algorithm == "ae" else _deep_equal(pred, expected):
        return ReleaseVerdict("correct", pred, "equal to the reference")
    if algorithm == "rle" and _rle_decodes_to(pred, x):
        return ReleaseVerdict("correct", pred, "non-canonical RLE decodes to x")
    return ReleaseVerdict("wrong", pred, "differs from the reference")


def release_verdict(
    completion: str | None, *, algorithm: str, predicts_z: bool, x: str, answer: Any
) -> ReleaseVerdict:
    """The release scorer's verdict on one completion (see the module docstring); never raises on the text.

    `predicts_z`: an output task (the release's `output_*`), else an input task; `answer`: the reference (x for an
    input task, the encoder's output for an output task); `x`: the input string (the RLE fallback decodes to it).
    """
    if algorithm not in RELEASE_ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r} (choose {', '.join(RELEASE_ALGORITHMS)})")
    expected = _lists(answer)  # a copy with lists, as the release's data files give it
    if not predicts_z and not isinstance(expected, str):
        return ReleaseVerdict("no answer", None, "reference input is not a string")
    if predicts_z:
        try:
            _check_reference(algorithm, expected)
        except _Shape as e:
            return ReleaseVerdict("no answer", None, str(e))
    if not completion:
        return ReleaseVerdict("no answer", None, "empty completion")
    try:
        pred, how = _extract(completion)
    except Exception as e:  # not expected; the text must never make scoring raise
        return ReleaseVerdict("no answer", None, f"extraction failed: {type(e).__name__}")
    if pred is _NOTHING:
        return ReleaseVerdict("no answer", None, how)
    try:
        if predicts_z:
            verdict = _judge_output(pred, algorithm, expected, x)
        else:
            verdict = _judge_input(pred, algorithm, expected)
    except Exception as e:  # where the release itself would raise (deep nesting, huge ints, Decimal overflow)
        return ReleaseVerdict("wrong", pred, f"comparison failed ({type(e).__name__}); the release would raise")
    return ReleaseVerdict(verdict.status, verdict.predicted, f"{how}; {verdict.reason}")


def release_status_counts(verdicts: Iterable[ReleaseVerdict]) -> dict[str, int]:
    """How many verdicts have each status (every status present, zeros included)."""
    counts = dict.fromkeys(RELEASE_STATUSES, 0)
    for verdict in verdicts:
        counts[verdict.status] += 1
    return counts


__all__ = [
    "LITERAL_EVAL_MAX_CHARS",
    "RELEASE_ALGORITHMS",
    "RELEASE_STATUSES",
    "ReleaseVerdict",
    "release_status_counts",
    "release_verdict",
]
