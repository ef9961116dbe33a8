"""Score RTCE completions: the answer of each completion (`eval.answers`), EM and ES against the reference
(`eval.metrics`), and per prompt pass@1, unbiased pass@5 (n >= 5) and the "any of the first 5" variant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eval.answers import extract_answer
from eval.metrics import any_of_first_k, edit_similarity, exact_match, pass_at_k

PASS_K = 5


def score_completions(completions: Sequence[str | None], answer: Any) -> dict[str, Any]:
    """Per-completion answers and scores, and the prompt's pass@k figures (a None completion: no answer)."""
    found, predictions, em, es = [], [], [], []
    for text in completions:
        ok, value = extract_answer(text) if text is not None else (False, None)
        found.append(ok)
        predictions.append(value)
        em.append(bool(ok and exact_match(value, answer)))
        es.append(edit_similarity(value, answer) if ok else 0.0)
    n, c = len(em), sum(em)
    return {
        "found": found,
        "predictions": predictions,
        "em": em,
        "es": es,
        "pass@1": pass_at_k(n, c, 1) if n else 0.0,
        f"pass@{PASS_K}": pass_at_k(n, c, PASS_K) if n >= PASS_K else None,
        f"any@{PASS_K}": any_of_first_k(em, PASS_K) if n >= PASS_K else None,
    }


__all__ = ["PASS_K", "score_completions"]
