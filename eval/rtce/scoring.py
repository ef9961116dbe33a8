"""Score RTCE completions: the answer of each completion (`tracegen.answers`), EM and ES against the reference
(`eval.metrics`), and per prompt pass@1, unbiased pass@5 (n >= 5) and the "any of the first 5" variant.

Two scoring modes (`SCORING_MODES`), both computed for every completion; `scoring` picks the one behind `em` and the
pass figures:
- `strict` (default): the paper's text. The answer is the `"output"` of the last `[ANSWER]` block's first JSON
  object (`tracegen.answers`); ints exactly, floats within 1e-3, strings case-folded and trimmed, lists and dicts
  recursively (`eval.metrics.exact_match`).
- `release`: the public release's scorer (`eval.rtce.release_scoring`): Python literals, bare values, numbers as
  strings, non-canonical RLE runs, a trailing `EOF` and the rest of its leniencies; no case folding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from eval.metrics import any_of_first_k, edit_similarity, exact_match, pass_at_k
from eval.rtce.release_scoring import release_verdict
from tracegen.answers import extract_answer

PASS_K = 5
Scoring = Literal["strict", "release"]
SCORING_MODES: tuple[str, ...] = ("strict", "release")


@dataclass(frozen=True)
class ReleaseContext:
    """What the release's scorer needs besides the answer: the algorithm, the task's direction and the input x."""

    algorithm: str
    predicts_z: bool
    x: str


def _pass_figures(em: Sequence[bool], suffix: str = "") -> dict[str, Any]:
    n, c = len(em), sum(em)
    return {
        f"pass@1{suffix}": pass_at_k(n, c, 1) if n else 0.0,
        f"pass@{PASS_K}{suffix}": pass_at_k(n, c, PASS_K) if n >= PASS_K else None,
        f"any@{PASS_K}{suffix}": any_of_first_k(em, PASS_K) if n >= PASS_K else None,
    }


def score_completions(
    completions: Sequence[str | None],
    answer: Any,
    *,
    scoring: Scoring = "strict",
    context: ReleaseContext | None = None,
) -> dict[str, Any]:
    """Per-completion answers and scores, and the prompt's pass@k figures (a None completion: no answer).

    With `context`, the release's verdicts too (`release_status`, `em_release`, `pass@5_release`); `em_strict` and
    `pass@5_strict` always. `found`, `predictions` and `es` come from the strict extraction.
    """
    if scoring not in SCORING_MODES:
        raise ValueError(f"unknown scoring mode {scoring!r} (choose {', '.join(SCORING_MODES)})")
    if scoring == "release" and context is None:
        raise ValueError("release scoring needs the item's algorithm, task and input (a ReleaseContext)")
    found, predictions, strict, es = [], [], [], []
    for text in completions:
        ok, value = extract_answer(text) if text is not None else (False, None)
        found.append(ok)
        predictions.append(value)
        strict.append(bool(ok and exact_match(value, answer)))
        es.append(edit_similarity(value, answer) if ok else 0.0)
    result: dict[str, Any] = {"found": found, "predictions": predictions, "scoring": scoring, "em_strict": strict}
    result |= _pass_figures(strict, "_strict")
    release: list[bool] | None = None
    if context is not None:
        verdicts = [
            release_verdict(
                text, algorithm=context.algorithm, predicts_z=context.predicts_z, x=context.x, answer=answer
            )
            for text in completions
        ]
        release = [v.status == "correct" for v in verdicts]
        result |= {"release_status": [v.status for v in verdicts], "em_release": release}
        result |= _pass_figures(release, "_release")
    em = release if scoring == "release" and release is not None else strict
    return result | {"em": em, "es": es} | _pass_figures(em)


__all__ = ["PASS_K", "SCORING_MODES", "ReleaseContext", "Scoring", "score_completions"]
