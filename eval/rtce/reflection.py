"""Multi-turn self-reflection on RTCE drafts (paper 000, §6.2 and Appendix E).

Starting from the zero-shot completions, each round asks the model to critique its current draft (Critique-B) and,
when the verdict is REVISE, to rewrite it from the critique alone (Revision, no leak). Before every scoring step the
draft's answer is canonicalized to ``[ANSWER]{"output": <value>}[/ANSWER]`` (``tracegen.answers.extract_answer``: last
answer block, fences stripped, 20k-character scan, ``{"return": x}`` flattened); a draft without valid JSON gets one
Format-repair call. The reference answer is used only to score and to stop early: no prompt builder takes it.

Prompts are the paper's, word for word; the paper's line wrapping (a PDF layout) is reflowed into sentences and its
typographic quotes are plain ``'``. The backends take one user message, so the system text opens it.

Context budgeting: tokens are estimated as ``ceil(chars / chars_per_token)``. A prompt may hold
``min(truncate_hard_chars, (model_ctx - gen_tokens - safety_margin) * chars_per_token)`` characters; when it is longer,
its variable parts (conversation, draft, feedback) share what the fixed text leaves: the shortest are kept whole,
the others are cut in the middle (head and tail kept, ``CUT_MARKER`` between). The generation length is
``min(gen_tokens, model_ctx - safety_margin - estimate(prompt))``.

Calls are batched per phase across items (all critiques of a round in one ``generate``, then all revisions, then all
repairs), so a vLLM backend sees large batches. Bad model output (None, empty, garbage) is a draft without an answer.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from eval.metrics import exact_match
from kt_train.generation import GenerationBackend, SamplingConfig
from tracegen.answers import extract_answer

__all__ = [
    "CUT_MARKER",
    "MISMATCH_NOTE",
    "PLACEHOLDER",
    "ReflectionConfig",
    "ReflectionResult",
    "RoundRecord",
    "accuracy_per_round",
    "canonicalize",
    "critique_prompt",
    "estimate_tokens",
    "fit_prompt",
    "parse_verdict",
    "prompt_char_limit",
    "reflect",
    "repair_prompt",
    "revision_prompt",
    "share_budget",
    "trim_middle",
]

# ---- prompts (paper 000, Appendix E) ----------------------------------------------------------------------------

CRITIQUE_B_SYSTEM = (
    "You are a structured reviewer. Provide actionable findings and a fix plan. "
    "Do not reveal or approximate any expected value."
)
CRITIQUE_B_USER = (
    "Conversation:\n{conversation}\n\nDraft answer:\n{draft}\n\n"
    "Write sections 'Findings:' and 'Fix:' in bullet points. Do not include or infer the expected value. "
    "End with VERDICT: KEEP or VERDICT: REVISE."
)
REVISION_SYSTEM = (
    "You are a careful editor. Revise the draft strictly according to the feedback. "
    "Do not include analysis. Provide only the improved final answer."
)
REVISION_USER = (
    "Conversation:\n{conversation}\n\nDraft answer:\n{draft}\n\nFeedback:\n{feedback}\n\n"
    "Now produce the corrected final answer only."
)
REPAIR_SYSTEM = (
    'You must output ONLY:\n[ANSWER]\n{"output": <value>}\n[/ANSWER]\nNo other text, code, or explanations.'
)
REPAIR_USER = (
    "Rewrite into the required format. If it already contains the needed value, keep it.\n------\n{raw_text}\n------"
)

CUT_MARKER = "\n[... cut ...]\n"
MISMATCH_NOTE = "Unconfirmed: no exact match was confirmed within the reflection rounds."
PLACEHOLDER = "[No confirmed answer.]"
_VERDICT = re.compile(r"\bverdict\b\W{0,8}\b(keep|revise)\b", re.IGNORECASE)


@dataclass
class ReflectionConfig:
    """The self-reflection loop; defaults are the paper's working configuration (Appendix E)."""

    rounds: int = field(default=2, metadata={"help": "Critique/revision rounds after the zero-shot draft."})
    critique_style: str = field(default="B", metadata={"help": "Critique prompt style.", "choices": ["B"]})
    stop_on: str = field(
        default="em",
        metadata={
            "help": "'em': stop an item as soon as its draft exactly matches the reference (the reference is used "
            "only to stop, never in a prompt); 'none': always run every round.",
            "choices": ["em", "none"],
        },
    )
    on_mismatch: str = field(
        default="annotate",
        metadata={
            "help": "When the last draft does not match: 'keep' it, 'annotate' it with a status note that reveals "
            "nothing, or replace it by a neutral 'placeholder' (no answer).",
            "choices": ["annotate", "keep", "placeholder"],
        },
    )
    model_ctx: int = field(default=8192, metadata={"help": "Context window (tokens) that prompts are budgeted for."})
    gen_tokens: int = field(default=512, metadata={"help": "Most tokens generated per call."})
    safety_margin: int = field(default=64, metadata={"help": "Tokens kept free on top of prompt and generation."})
    chars_per_token: float = field(default=1.5, metadata={"help": "Characters per token for the token estimate."})
    truncate_hard_chars: int = field(default=16000, metadata={"help": "Most characters of any prompt sent."})
    format_repair: bool = field(
        default=True, metadata={"help": "Ask the model once to reformat a draft that holds no valid answer JSON."}
    )

    def __post_init__(self) -> None:
        for name in ("critique_style", "stop_on", "on_mismatch"):
            choices = next(f for f in dataclasses.fields(self) if f.name == name).metadata["choices"]
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} must be one of {choices}, got {getattr(self, name)!r}")
        if self.rounds < 0:
            raise ValueError(f"rounds must be >= 0, got {self.rounds}")
        if self.gen_tokens < 1 or self.safety_margin < 0:
            raise ValueError(
                f"need gen_tokens >= 1 and safety_margin >= 0, got {self.gen_tokens}, {self.safety_margin}"
            )
        if self.model_ctx <= self.gen_tokens + self.safety_margin:
            raise ValueError(f"model_ctx ({self.model_ctx}) must exceed gen_tokens + safety_margin")
        if self.chars_per_token <= 0 or self.truncate_hard_chars < 1:
            raise ValueError("chars_per_token must be > 0 and truncate_hard_chars >= 1")


class ReflectionItem(Protocol):
    """What `reflect` needs of an item (`eval.rtce.items.RTCEItem` fits); `id` is read when present."""

    prompt: str
    answer: Any


@dataclass
class RoundRecord:
    """One round of one item (round 0: the zero-shot draft, no critique)."""

    round: int
    verdict: str | None  # "KEEP" | "REVISE"; None in round 0
    critique: str | None
    revision: str | None  # the editor's raw output; None when not revised
    repair: str | None  # the format-repair output when one was asked for
    draft: str  # the draft after this round: canonical answer text when found, else the raw text
    prediction: Any
    found: bool
    em: bool


@dataclass
class ReflectionResult:
    """The rounds of one item and its final answer (after the mismatch policy)."""

    id: str
    rounds: list[RoundRecord]
    draft: str
    prediction: Any
    found: bool
    em: bool
    stopped_early: bool
    annotation: str | None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---- pure helpers ----------------------------------------------------------------------------------------------


def parse_verdict(critique: str | None) -> str:
    """The last ``VERDICT: KEEP|REVISE`` (any case, loose punctuation); REVISE when there is none."""
    matches = _VERDICT.findall(critique) if isinstance(critique, str) else []
    return matches[-1].upper() if matches else "REVISE"


def estimate_tokens(text: str, chars_per_token: float) -> int:
    return math.ceil(len(text) / chars_per_token)


def prompt_char_limit(config: ReflectionConfig) -> int:
    """Most characters a prompt may have so that it, `gen_tokens` and the margin fit `model_ctx`."""
    tokens = config.model_ctx - config.gen_tokens - config.safety_margin
    chars = math.floor(tokens * config.chars_per_token)
    while chars > 0 and math.ceil(chars / config.chars_per_token) > tokens:  # float rounding
        chars -= 1
    return min(chars, config.truncate_hard_chars)


def trim_middle(text: str, max_chars: int) -> str:
    """`text` cut to `max_chars` characters: head and tail kept around `CUT_MARKER`."""
    if len(text) <= max_chars:
        return text
    keep = max_chars - len(CUT_MARKER)
    if keep <= 0:
        return text[len(text) - max(max_chars, 0) :]
    head = keep // 2
    return text[:head] + CUT_MARKER + text[len(text) - (keep - head) :]


def share_budget(fields: dict[str, str], budget: int) -> dict[str, str]:
    """Fit the fields into `budget` characters: shortest first, each gets at most an equal share of what is left."""
    if sum(map(len, fields.values())) <= budget:
        return dict(fields)
    out: dict[str, str] = {}
    left = max(budget, 0)
    order = sorted(fields, key=lambda name: len(fields[name]))
    for k, name in enumerate(order):
        out[name] = trim_middle(fields[name], left // (len(order) - k))
        left -= len(out[name])
    return {name: out[name] for name in fields}


def fit_prompt(system: str, template: str, fields: dict[str, str], config: ReflectionConfig) -> tuple[str, int]:
    """The prompt (system text, blank line, user text) within budget, and its generation length."""

    def render(values: dict[str, str]) -> str:
        return f"{system}\n\n{template.format(**values)}"

    fixed = len(render(dict.fromkeys(fields, "")))
    text = render(share_budget(fields, prompt_char_limit(config) - fixed))
    left = config.model_ctx - config.safety_margin - estimate_tokens(text, config.chars_per_token)
    if len(text) > config.truncate_hard_chars or left < 1:
        raise ValueError(f"the fixed prompt text ({fixed} chars) does not fit model_ctx / truncate_hard_chars")
    return text, min(config.gen_tokens, left)


def critique_prompt(conversation: str, draft: str, config: ReflectionConfig) -> tuple[str, int]:
    return fit_prompt(CRITIQUE_B_SYSTEM, CRITIQUE_B_USER, {"conversation": conversation, "draft": draft}, config)


def revision_prompt(conversation: str, draft: str, feedback: str, config: ReflectionConfig) -> tuple[str, int]:
    fields = {"conversation": conversation, "draft": draft, "feedback": feedback}
    return fit_prompt(REVISION_SYSTEM, REVISION_USER, fields, config)


def repair_prompt(raw_text: str, config: ReflectionConfig) -> tuple[str, int]:
    return fit_prompt(REPAIR_SYSTEM, REPAIR_USER, {"raw_text": raw_text}, config)


def canonical_text(value: Any) -> str:
    """The answer block of a value, in the tasks' answer format."""
    return f"[ANSWER]\n{json.dumps({'output': value}, ensure_ascii=False)}\n[/ANSWER]"


def canonicalize(text: str | None) -> tuple[bool, Any, str]:
    """``(found, value, draft)``: the canonical answer text when an answer is found, else the text itself."""
    text = text if isinstance(text, str) else ""
    found, value = extract_answer(text)
    return found, value, canonical_text(value) if found else text


def accuracy_per_round(results: Sequence[ReflectionResult], rounds: int | None = None) -> list[float]:
    """EM rate after each round (round 0: the zero-shot drafts); an item that stopped keeps its last value."""
    if not results:
        return []
    count = 1 + (rounds if rounds is not None else max(len(r.rounds) - 1 for r in results))
    return [sum(r.rounds[min(k, len(r.rounds) - 1)].em for r in results) / len(results) for k in range(count)]


# ---- the loop --------------------------------------------------------------------------------------------------


def _generate(
    backend: GenerationBackend, prompts: list[tuple[str, int]], sampling: SamplingConfig, stop: list[str] | None
) -> list[str]:
    """One text per prompt; one `generate` call per distinct generation length (normally one)."""
    texts = [""] * len(prompts)
    by_length: dict[int, list[int]] = {}
    for index, (_, length) in enumerate(prompts):
        by_length.setdefault(length, []).append(index)
    for length, indices in by_length.items():
        params = dataclasses.replace(sampling, n=1, max_new_tokens=length, stop=stop)
        outputs = backend.generate([prompts[i][0] for i in indices], params)
        for index, output in zip(indices, outputs, strict=True):
            first = output[0] if output else None
            texts[index] = first if isinstance(first, str) else ""
    return texts


def _canonicalize_all(
    texts: list[str], backend: GenerationBackend, sampling: SamplingConfig, config: ReflectionConfig
) -> list[tuple[bool, Any, str, str | None]]:
    """``(found, value, draft, repair)`` per text; the texts without an answer get one batched repair call."""
    done = [(*canonicalize(text), None) for text in texts]
    if not config.format_repair:
        return done
    todo = [i for i, (found, *_) in enumerate(done) if not found and texts[i].strip()]
    repairs = _generate(backend, [repair_prompt(texts[i], config) for i in todo], sampling, sampling.stop)
    for i, repair in zip(todo, repairs, strict=True):
        found, value, _ = canonicalize(repair)
        done[i] = (found, value, canonical_text(value) if found else texts[i], repair)
    return done


def _record(item: ReflectionItem, round_: int, canon: tuple[bool, Any, str, str | None], **extra: Any) -> RoundRecord:
    found, value, draft, repair = canon
    em = found and exact_match(value, item.answer)
    return RoundRecord(round_, repair=repair, draft=draft, prediction=value, found=found, em=em, **extra)


def reflect(
    items: Sequence[ReflectionItem],
    drafts: Sequence[str | None],
    backend: GenerationBackend,
    sampling: SamplingConfig,
    config: ReflectionConfig | None = None,
    progress: bool = True,
) -> list[ReflectionResult]:
    """Run the critique/revision rounds on the zero-shot `drafts` of `items` (see the module docstring)."""
    from tqdm.auto import tqdm

    config = config or ReflectionConfig()
    if len(items) != len(drafts):
        raise ValueError(f"{len(drafts)} drafts for {len(items)} items")
    bar = tqdm(total=1 + 3 * config.rounds, desc="reflection", unit="phase", disable=not progress)
    texts = [d if isinstance(d, str) else "" for d in drafts]
    bar.set_postfix_str("round 0: format repair")
    canon = _canonicalize_all(texts, backend, sampling, config)
    records = [
        [_record(item, 0, c, verdict=None, critique=None, revision=None)] for item, c in zip(items, canon, strict=True)
    ]
    bar.update()

    def active() -> list[int]:
        return [i for i, recs in enumerate(records) if not (config.stop_on == "em" and recs[-1].em)]

    for round_ in range(1, config.rounds + 1):
        todo = active()
        if not todo:
            break
        bar.set_postfix_str(f"round {round_}: critique")
        prompts = [critique_prompt(items[i].prompt, records[i][-1].draft, config) for i in todo]
        critiques = dict(zip(todo, _generate(backend, prompts, sampling, None), strict=True))
        bar.update()
        bar.set_postfix_str(f"round {round_}: revision")
        revise = [i for i in todo if parse_verdict(critiques[i]) == "REVISE"]
        prompts = [revision_prompt(items[i].prompt, records[i][-1].draft, critiques[i], config) for i in revise]
        revisions = dict(zip(revise, _generate(backend, prompts, sampling, sampling.stop), strict=True))
        bar.update()
        bar.set_postfix_str(f"round {round_}: format repair")
        canon = dict(
            zip(revise, _canonicalize_all([revisions[i] for i in revise], backend, sampling, config), strict=True)
        )
        bar.update()
        for i in todo:
            extra = {"verdict": parse_verdict(critiques[i]), "critique": critiques[i], "revision": revisions.get(i)}
            if i in canon:
                records[i].append(_record(items[i], round_, canon[i], **extra))
            else:  # KEEP: the draft stays as it is
                last = records[i][-1]
                records[i].append(dataclasses.replace(last, round=round_, repair=None, **extra))
    bar.close()
    return [
        _finish(getattr(item, "id", str(i)), recs, config)
        for i, (item, recs) in enumerate(zip(items, records, strict=True))
    ]


def _finish(id_: Any, records: list[RoundRecord], config: ReflectionConfig) -> ReflectionResult:
    last = records[-1]
    result = ReflectionResult(
        id=str(id_),
        rounds=records,
        draft=last.draft,
        prediction=last.prediction,
        found=last.found,
        em=last.em,
        stopped_early=len(records) - 1 < config.rounds,
        annotation=None,
    )
    if not last.em and config.on_mismatch == "annotate":
        result.annotation = MISMATCH_NOTE
    elif not last.em and config.on_mismatch == "placeholder":
        result.draft, result.prediction, result.found = PLACEHOLDER, None, False
    return result
