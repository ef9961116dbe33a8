"""Feed & ex decoding (KT paper §5.3): the interpreter runs each line the model generates and the supervisor writes
its values after it, as an end-of-line comment, before the model writes the next line.

The model generates one line at a time (until a newline or `#`, where a model trained with feedback starts its own
comment); `dsl.feedback.LineFeedback` parses and runs the program so far. A line that parses and runs gets the
comment `# [values]` (the same form the model was trained on, `dsl.feedback.with_feedback`); a line that does not
ends the program there. The program also ends at its output line, when the model stops, or after `max_lines`
lines. The completion is the whole answer as the model saw it; the checker then judges its program like any other,
so the verdict is always the supervisor's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from dsl.feedback import FEEDBACK_MAX_VALUES, LineFeedback
from kt_train.generation import SamplingConfig

LINE_STOPS = ["\n", "#"]


class ContinuingBackend(Protocol):
    """A backend that continues answers already begun (`TransformersBackend`)."""

    def generate(
        self, prompts: list[str], sampling: SamplingConfig, prefixes: Sequence[str] | None = None
    ) -> list[list[str] | None]: ...


@dataclass
class _Answer:
    """One sample being written: its prompt, the answer so far and the interpreter state."""

    prompt: str
    seed: int
    feedback: LineFeedback
    text: str = ""
    done: bool = False
    dropped: bool = False  # the prompt did not fit: no completion


def _step(answer: _Answer, generated: str, max_lines: int) -> None:
    """Take one generated piece (a line, up to its newline or `#`) into the answer."""
    code = generated.removesuffix("#").removesuffix("\n")
    ended = not generated.endswith(("\n", "#"))  # the model stopped (or ran out of tokens) inside the line
    if not code.strip():
        answer.done = True  # an empty line or the end: the program is what was written so far
        return
    result = answer.feedback.add(code)
    if result.error is not None:
        answer.text += result.code
        answer.done = True
        return
    answer.text += f"{result.code} {result.comment}" + ("" if result.is_output else "\n")
    answer.done = result.is_output or ended or len(answer.feedback.lines) >= max_lines


def feed_and_execute(
    backend: ContinuingBackend,
    prompts: Sequence[str],
    sampling: SamplingConfig,
    max_values: int = FEEDBACK_MAX_VALUES,
    max_lines: int = 128,
) -> list[list[str] | None]:
    """`sampling.n` answers per prompt, written line by line with the interpreter's values after each line (None for
    a prompt the backend dropped). `sampling.max_new_tokens` bounds each line; sample k of every prompt is drawn
    with seed `sampling.seed + k`."""
    answers = [
        _Answer(prompt, sampling.seed + k, LineFeedback(max_values)) for prompt in prompts for k in range(sampling.n)
    ]
    per_line = replace(sampling, n=1, stop=LINE_STOPS)
    while active := [a for a in answers if not a.done]:
        for seed in sorted({a.seed for a in active}):
            group = [a for a in active if a.seed == seed]
            outputs = backend.generate(
                [a.prompt for a in group], replace(per_line, seed=seed), prefixes=[a.text for a in group]
            )
            for answer, texts in zip(group, outputs, strict=True):
                if texts is None:  # the prompt (with the answer so far) no longer fits
                    answer.dropped, answer.done = answer.text == "", True
                else:
                    _step(answer, texts[0], max_lines)
    results: list[list[str] | None] = []
    for index in range(len(prompts)):
        group = answers[index * sampling.n : (index + 1) * sampling.n]
        results.append(None if all(a.dropped for a in group) else [a.text for a in group])
    return results


__all__ = ["LINE_STOPS", "ContinuingBackend", "feed_and_execute"]
