"""Scores for RTCE predictions: exact match, edit similarity and pass@k.

Predictions and references are JSON values (int, float, str, list, dict, bool, None). ``exact_match`` is lenient
where JSON or the model's formatting is: floats compare approximately, strings ignore case and surrounding
whitespace, and a tuple equals a list with the same items. A missing prediction (``extract_answer`` found nothing)
is the caller's business: these functions score a value that was found.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from typing import Any

from rapidfuzz.distance import Levenshtein

__all__ = ["ABS_TOL", "REL_TOL", "any_of_first_k", "canonical_json", "edit_similarity", "exact_match", "pass_at_k"]

REL_TOL = 1e-3
ABS_TOL = 1e-3


def _numbers_match(prediction: int | float, reference: int | float) -> bool:
    """Ints exactly; otherwise as floats within ``REL_TOL`` / ``ABS_TOL``."""
    if isinstance(prediction, int) and isinstance(reference, int):
        return prediction == reference
    try:
        return math.isclose(float(prediction), float(reference), rel_tol=REL_TOL, abs_tol=ABS_TOL)
    except OverflowError:  # an int too large for a float
        return False


def exact_match(prediction: Any, reference: Any) -> bool:
    """Whether ``prediction`` equals ``reference`` under the RTCE rules (see the module docstring).

    bool is not a number here (``True != 1``); None only equals None; lists/tuples match element-wise with equal
    length; dicts need the same key set and matching values; anything else compares with ``==``.
    """
    if isinstance(prediction, bool) or isinstance(reference, bool):
        return type(prediction) is type(reference) and prediction == reference
    if prediction is None or reference is None:
        return prediction is None and reference is None
    if isinstance(prediction, int | float) and isinstance(reference, int | float):
        return _numbers_match(prediction, reference)
    if isinstance(prediction, str) and isinstance(reference, str):
        return prediction.strip().casefold() == reference.strip().casefold()
    if isinstance(prediction, list | tuple) and isinstance(reference, list | tuple):
        return len(prediction) == len(reference) and all(map(exact_match, prediction, reference))
    if isinstance(prediction, dict) and isinstance(reference, dict):
        same_keys = prediction.keys() == reference.keys()
        return same_keys and all(exact_match(prediction[key], reference[key]) for key in reference)
    try:
        return bool(prediction == reference)
    except Exception:  # e.g. an array whose truth value is ambiguous
        return False


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys (non-ASCII kept); ``repr`` for values JSON cannot encode."""
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def edit_similarity(prediction: Any, reference: Any) -> float:
    """Normalized Levenshtein similarity in [0, 1] of the canonical JSON strings; 1.0 when identical."""
    return float(Levenshtein.normalized_similarity(canonical_json(prediction), canonical_json(reference)))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` are correct: ``1 - C(n-c, k) / C(n, k)``.

    Computed as ``1 - prod(1 - k / i for i in n-c+1..n)``, which avoids huge binomials.
    Raises ValueError when any argument is negative, ``k > n`` or ``c > n``.
    """
    if n < 0 or c < 0 or k < 0:
        raise ValueError(f"pass_at_k needs non-negative arguments, got n={n}, c={c}, k={k}")
    if k > n or c > n:
        raise ValueError(f"pass_at_k needs k <= n and c <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def any_of_first_k(correct: Sequence[bool], k: int) -> bool:
    """Whether any of the first ``k`` samples is correct (the empirical pass@k of one ordered run).

    Raises ValueError when ``k`` is negative or larger than ``len(correct)``.
    """
    if k < 0 or k > len(correct):
        raise ValueError(f"any_of_first_k needs 0 <= k <= len(correct) = {len(correct)}, got k={k}")
    return any(bool(x) for x in itertools.islice(correct, k))
