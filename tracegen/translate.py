"""Execution traces to natural-language reasoning (paper §6.3), with the answer in the Appendix F format.

Two translators turn a kept `traces.jsonl` record (see `tracegen.traces`) into a step-by-step explanation that ends
with `[ANSWER]\\n{"output": <label JSON>}\\n[/ANSWER]`:

- `template_translate`: deterministic, no model (the CPU default). It parses the snoop trace into steps (calls,
  executed lines with the values they assign, comprehension results, returns) and narrates them as sentences
  ("Line 5: `w = c` sets w to 'a'."). Past `max_steps` it narrates the first and last steps and summarises the
  middle (how many steps, on which lines, and the values the variables hold afterwards). Intermediate values are cut
  at `value_chars`; the final value and the answer are always exact.
- `llm_translate`: one prompt per record (algorithm description, reference code, input, trace, and the instruction
  to explain the execution stating the exact intermediate values as its own reasoning, without citing the trace);
  prompts over `sampling.max_prompt_chars` are dropped (None). The backend is any object with
  `generate(prompts, sampling) -> list[list[str] | None]` (`kt_train.generation.get_backend`, imported lazily).

`faithful` keeps an LLM text only when its [ANSWER] block parses and equals the label and enough of the trace's
intermediate values (`trace_values`) appear in it. `translate_traces` runs a translator over a traces directory into
`translations.jsonl` (resumable by id) and `summary.json`.
"""

from __future__ import annotations

import ast
import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kt_train.generation import GENERATION_ERRORS
from kt_train.records import read_jsonl
from kt_train.stages import SUMMARY_FILE, RunFolder, RunOptions, content_hash, model_hash
from tracegen.answers import extract_answer
from tracegen.tasks import dumps

TRACES_FILE = "traces.jsonl"
TRANSLATIONS = "translations"
TRANSLATIONS_FILE = f"{TRANSLATIONS}.jsonl"
VERSION = 3
"""The code version of the translations (part of a run's settings): raised when records change."""
GENERATION_ERROR = "generation_error"
"""The reason of a translation whose generation failed (made again by a rerun)."""
logger = logging.getLogger(__name__)
BACKENDS = ("template", "transformers", "vllm", "openai")
DEFAULT_MAX_STEPS = 40
DEFAULT_VALUE_CHARS = 300
DEFAULT_MIN_VALUE_SHARE = 0.5
DEFAULT_MAX_PROMPT_CHARS = 32768
BATCH_SIZE = 64
MAIN = "main_solution"

_CODE = re.compile(r"^(\d+) \| (.*)$")
_ASSIGN = re.compile(r"^\.{2,} (.+?) = (.*)$")
_CALL = re.compile(r"^>>> Call to (\S+) in File")
_RETURN = re.compile(r"^<<< Return value from (\S+?): (.*)$")
_RESULT = re.compile(r"^Result: (.*)$")


@dataclass
class Step:
    """One narrated event of a trace: `kind` is call, line, result or return."""

    kind: str
    name: str = ""
    line: int = 0
    code: str = ""
    value: str = ""
    assigns: list[tuple[str, str]] = field(default_factory=list)
    before: list[str | None] = field(default_factory=list)  # each assigned name's previous value, if any


def short_name(function: str) -> str:
    """`main_solution.<locals>.walk` -> `walk`."""
    return function.rsplit(".", 1)[-1]


def parse_trace(trace: str) -> list[Step]:
    """The steps of a snoop trace; generator bookkeeping and `len(...)`/iteration notes are left out."""
    steps: list[Step] = []
    for raw in trace.splitlines():
        line = raw.strip()
        if match := _CODE.match(line):
            steps.append(Step("line", line=int(match[1]), code=match[2].strip()))
        elif match := _CALL.match(line):
            steps.append(Step("call", name=short_name(match[1])))
        elif match := _RETURN.match(line):
            if not match[1].startswith("<"):  # `<genexpr>` returns are bookkeeping
                steps.append(Step("return", name=short_name(match[1]), value=match[2]))
        elif match := _RESULT.match(line):
            steps.append(Step("result", value=match[1]))
        elif (match := _ASSIGN.match(line)) and steps and _narrated(match[1], match[2], steps[-1]):
            steps[-1].assigns.append((match[1], match[2]))
    return _drop_noise(steps)


def _drop_noise(steps: Sequence[Step]) -> list[Step]:
    """Without unchanged re-reported values, bare `def` lines and a bare line repeated right away."""
    kept: list[Step] = []
    last: dict[str, str] = {}
    for step in steps:
        if step.kind == "line":
            step.assigns = [(n, v) for n, v in step.assigns if last.get(n) != v]
        step.before = [last.get(n) for n, _ in step.assigns]
        for name, value in step.assigns:
            last[name] = value
        bare = step.kind == "line" and not step.assigns
        if bare and step.code.startswith(("def ", "async def ")):
            continue
        previous = kept[-1] if kept else None
        if previous and previous.kind == "line" and not previous.assigns and previous.line == step.line:
            kept[-1] = step
            continue
        kept.append(step)
    return kept


def _narrated(name: str, value: str, owner: Step) -> bool:
    """A variable value worth stating: not an object repr, attached to a call or an executed line."""
    return _is_variable(name) and not value.startswith("<") and owner.kind in ("line", "call")


def _is_variable(name: str) -> bool:
    return not name.startswith(("len(", "Iterating over", "Values of")) and ":" not in name


def trace_values(trace: str) -> list[str]:
    """Distinct values (as written) of the trace's `var = value` lines, first-seen order; object reprs excluded."""
    seen: dict[str, None] = {}
    for raw in trace.splitlines():
        match = _ASSIGN.match(raw.strip())
        if match and _is_variable(match[1]) and not match[2].startswith("<"):
            seen.setdefault(match[2], None)
    return list(seen)


def _short(value: str, limit: int) -> str:
    if len(value) <= limit:
        return value
    return f"{value[:limit]}... ({len(value)} characters in all)"


def grown_part(old: str | None, new: str) -> str | None:
    """The text added at the end of a list or dict repr (`[1]` -> `[1, 2]`: `2`), or None if it is not a growth."""
    if old is None or len(old) < 2 or old[-1] not in "]}" or old[0] + old[-1] not in ("[]", "{}"):
        return None
    if len(new) <= len(old) or new[-1] != old[-1] or not new.startswith(old[:-1]):
        return None
    added = new[len(old) - 1 : -1]
    if len(old) > 2:
        if not added.startswith(", "):
            return None
        added = added[2:]
    return added


def _change(name: str, value: str, old: str | None, limit: int) -> str:
    added = grown_part(old, value)
    if added is not None:
        return f"adds {_short(added, limit)} to {name}"
    return f"sets {name} to {_short(value, limit)}"


def _setting(step: Step, limit: int) -> str:
    before = step.before or [None] * len(step.assigns)
    return " and ".join(_change(n, v, old, limit) for (n, v), old in zip(step.assigns, before, strict=True))


def step_sentence(step: Step, value_chars: int = DEFAULT_VALUE_CHARS) -> str:
    """One sentence narrating `step`."""
    if step.kind == "call":
        args = ", ".join(f"{n} = {_short(v, value_chars)}" for n, v in step.assigns)
        return f"`{step.name}` is called" + (f" with {args}." if args else ".")
    if step.kind == "return":
        return f"`{step.name}` returns {_short(step.value, value_chars)}."
    if step.kind == "result":
        return f"The comprehension evaluates to {_short(step.value, value_chars)}."
    if step.assigns:
        return f"Line {step.line}: `{step.code}` {_setting(step, value_chars)}."
    return f"Line {step.line}: `{step.code}`."


def summary_sentence(steps: Sequence[Step], value_chars: int = DEFAULT_VALUE_CHARS) -> str:
    """A sentence standing for `steps` (a long middle part): count, lines, and the variables' values afterwards."""
    lines = sorted({s.line for s in steps if s.kind == "line"})
    final: dict[str, str] = {}
    for step in steps:
        for name, value in step.assigns:
            final.pop(name, None)
            final[name] = value
    where = f" on lines {', '.join(map(str, lines))}" if lines else ""
    text = f"The same pattern continues for {len(steps)} more steps{where}."
    if final:
        text += " After them, " + ", ".join(f"{n} = {_short(v, value_chars)}" for n, v in final.items()) + "."
    return text


def answer_block(label: Any) -> str:
    """The Appendix F answer: `[ANSWER]\\n{"output": <label JSON>}\\n[/ANSWER]`."""
    return f'[ANSWER]\n{{"output": {dumps(label)}}}\n[/ANSWER]'


def _final_value(record: Mapping[str, Any]) -> str:
    last = record["trace"].rsplit("\n", 1)[-1]
    match = _RETURN.match(last.strip())
    return match[2] if match else dumps(record["label"])


def template_translate(
    record: Mapping[str, Any], max_steps: int = DEFAULT_MAX_STEPS, value_chars: int = DEFAULT_VALUE_CHARS
) -> str:
    """Deterministic step-by-step narration of a kept trace record, ending with the exact answer block."""
    if max_steps < 2:
        raise ValueError("max_steps must be >= 2")
    steps = parse_trace(record["trace"])
    if steps and steps[-1].kind == "return" and steps[-1].name == MAIN:
        steps = steps[:-1]  # stated exactly in the conclusion
    if len(steps) <= max_steps:
        sentences = [step_sentence(s, value_chars) for s in steps]
    else:
        head, tail = max_steps // 2, max_steps - max_steps // 2
        sentences = [step_sentence(s, value_chars) for s in steps[:head]]
        sentences.append(summary_sentence(steps[head : len(steps) - tail], value_chars))
        sentences += [step_sentence(s, value_chars) for s in steps[len(steps) - tail :]]
    label = record["label"]
    conclusion = f"So `{MAIN}` returns {_final_value(record)}, which as JSON is {dumps(label)}."
    intro = f"Let me execute `{MAIN}` on the input {dumps(record['input'])} step by step."
    return "\n".join([intro, *sentences, conclusion, answer_block(label)])


def faithful(
    text: str, record: Mapping[str, Any], min_value_share: float = DEFAULT_MIN_VALUE_SHARE
) -> tuple[bool, str]:
    """Keep `text` when its answer equals the label and >= `min_value_share` of the trace values appear in it.

    Reasons: `no_answer`, `wrong_answer`, `low_value_share=S` (dropped) or `value_share=S` (kept).
    """
    ok, value = extract_answer(text, closed_block=True)
    if not ok:
        return False, "no_answer"
    if value != record["label"]:
        return False, "wrong_answer"
    share = value_share(text, record)
    if share < min_value_share:
        return False, f"low_value_share={share:.2f}"
    return True, f"value_share={share:.2f}"


def value_share(text: str, record: Mapping[str, Any]) -> float:
    """The share of `trace_values` found in `text` (a string value also counts without its quotes); 1.0 if none."""
    values = trace_values(record["trace"])
    if not values:
        return 1.0
    return sum(_mentioned(v, text) for v in values) / len(values)


def _mentioned(value: str, text: str) -> bool:
    if value in text:
        return True
    try:
        literal = ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return isinstance(literal, str) and bool(literal) and (literal in text or dumps(literal) in text)


def _algorithm(name: str) -> Any:
    from tracegen.algorithms import get_algorithm

    return get_algorithm(name)


def reference_source(record: Mapping[str, Any]) -> str:
    """The traced `main_solution` source: the encoder for `encode` records, the decoder for `decode` ones."""
    algorithm = _algorithm(record["algorithm"])
    x = record["input"] if record["direction"] == "encode" else record["label"]
    freq = algorithm.freq(x)
    return algorithm.encoder_source(freq) if record["direction"] == "encode" else algorithm.decoder_source(freq)


PROMPT = """You are given a Python function `main_solution`, an input for it, and a line-by-line execution trace of \
the call. Explain how `main_solution` runs on this input, step by step, as your own reasoning: state the exact \
intermediate values of the variables as you go and the exact return value. Do not cite, quote or mention the trace \
(write as if you were executing the code in your head). End with the return value as JSON in exactly this format:
[ANSWER]
{{"output": <return value as JSON>}}
[/ANSWER]

Algorithm: {description}
The function is the {role}.

[PYTHON]
{source}
[/PYTHON]

Input: {given}

[TRACE]
{trace}
[/TRACE]
"""


def translation_prompt(record: Mapping[str, Any]) -> str:
    """The LLM prompt that turns one trace record into reasoning."""
    algorithm = _algorithm(record["algorithm"])
    role = "encoder" if record["direction"] == "encode" else "decoder"
    return PROMPT.format(
        description=algorithm.description,
        role=role,
        source=reference_source(record).rstrip(),
        given=dumps(record["input"]),
        trace=record["trace"],
    )


def llm_translate(records: Sequence[Mapping[str, Any]], backend: Any, sampling: Any) -> list[str | None]:
    """One text per record (the first sample), None for prompts over `sampling.max_prompt_chars` or no output."""
    limit = getattr(sampling, "max_prompt_chars", None) or DEFAULT_MAX_PROMPT_CHARS
    prompts = [translation_prompt(r) for r in records]
    keep = [i for i, p in enumerate(prompts) if len(p) <= limit]
    outputs: list[str | None] = [None] * len(records)
    if not keep:
        return outputs
    generated = backend.generate([prompts[i] for i in keep], sampling)
    for index, samples in zip(keep, generated, strict=True):
        outputs[index] = samples[0] if samples else None
    return outputs


def _resolve_backend(
    backend: str | Any, model: str | None, sampling: Any, backend_options: Any = None
) -> tuple[Any, Any, str]:
    """(backend object or None for the template, sampling, backend name); a named LLM backend is built from
    `backend_options` (`kt_train.generation.BackendOptions`: the server's URL for openai)."""
    if isinstance(backend, str):
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
        if backend == "template":
            return None, sampling, "template"
        if not model:
            raise ValueError(f"the {backend} backend needs a model")
        from kt_train.generation import BackendOptions, SamplingConfig, make_backend

        options = backend_options if backend_options is not None else BackendOptions(backend=backend)
        if options.backend != backend:
            raise ValueError(f"backend {backend!r} with options for {options.backend!r}")
        return make_backend(options, model), sampling or SamplingConfig(), backend
    if sampling is None:
        from kt_train.generation import SamplingConfig

        sampling = SamplingConfig()
    return backend, sampling, str(getattr(backend, "name", type(backend).__name__))


def _output_record(record: Mapping[str, Any], text: str | None, kept: bool, reason: str | None, name: str) -> dict:
    return {
        "id": record["id"],
        "item_id": record["item_id"],
        "algorithm": record["algorithm"],
        "direction": record["direction"],
        "input": record["input"],
        "label": record["label"],
        "translation": text,
        "kept": kept,
        "reason": reason,
        "backend": name,
    }


def translate_batch(
    records: Sequence[Mapping[str, Any]],
    backend: Any,
    sampling: Any,
    name: str,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    min_value_share: float = DEFAULT_MIN_VALUE_SHARE,
) -> list[dict[str, Any]]:
    """translations.jsonl records of `records`: template narration (backend None) or filtered LLM output."""
    if backend is None:
        texts: list[str | None] = [template_translate(r, max_steps=max_steps) for r in records]
        share = 0.0  # the template states the answer; its value share is not filtered on (long traces are cut)
    else:
        texts = llm_translate(records, backend, sampling)
        share = min_value_share
    out = []
    for record, text in zip(records, texts, strict=True):
        if text is None:
            out.append(_output_record(record, None, False, "no_output", name))
            continue
        kept, reason = faithful(text, record, share)
        out.append(_output_record(record, text, kept, None if kept and backend is None else reason, name))
    return out


def summarize(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Kept/total counts and kept share overall and per algorithm and direction, with the drop reasons."""
    cells: dict[str, dict[str, Counter[str]]] = {}
    reasons: Counter[str] = Counter()
    for record in records:
        cell = cells.setdefault(record["algorithm"], {}).setdefault(record["direction"], Counter())
        cell["total"] += 1
        cell["kept"] += record["kept"]
        if not record["kept"]:
            reasons[str(record["reason"]).split("=")[0]] += 1
    total = sum(c["total"] for d in cells.values() for c in d.values())
    kept = sum(c["kept"] for d in cells.values() for c in d.values())
    return {
        "total": total,
        "kept": kept,
        "kept_share": kept / total if total else 0.0,
        "reasons": dict(sorted(reasons.items())),
        "algorithms": {
            alg: {
                d: {"total": c["total"], "kept": c["kept"], "kept_share": c["kept"] / c["total"]}
                for d, c in sorted(dirs.items())
            }
            for alg, dirs in cells.items()
        },
    }


def translate_traces(
    traces_dir: Path | str,
    output_dir: Path | str,
    backend: str | Any = "template",
    model: str | None = None,
    sampling: Any = None,
    progress: bool = True,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    min_value_share: float = DEFAULT_MIN_VALUE_SHARE,
    batch_size: int = BATCH_SIZE,
    options: RunOptions | None = None,
    backend_options: Any = None,
) -> dict[str, Any]:
    """Translate the kept records of `traces_dir`/traces.jsonl into `output_dir`/translations.jsonl; return summary.

    Under the run contract (`kt_train.stages`): ids already in translations.jsonl are not translated again (except
    batches whose generation failed, made again by up to `options.retries` reruns); new records are appended per
    batch, and at the end the file is rewritten in traces.jsonl order (so a resumed or merged run ends identical to
    one made in one go). A rerun with other settings (the traces' bytes, backend, model, sampling, limits) is refused
    unless `options.overwrite`.
    """
    path_in = Path(traces_dir) / TRACES_FILE
    if not path_in.is_file():
        raise FileNotFoundError(f"no {TRACES_FILE} in {traces_dir} (collect it with `kt traces collect`)")
    records = [r for r in read_jsonl(path_in) if r.get("kept")]
    engine, sampling, name = _resolve_backend(backend, model, sampling, backend_options)
    settings = {
        "traces_sha256": content_hash(path_in),
        "backend": name,
        "model": model,
        "model_sha256": model_hash(model),
        "sampling": asdict(sampling) if engine is not None else None,
        "max_steps": max_steps,
        "min_value_share": min_value_share,
        "version": VERSION,
    }
    folder = RunFolder(output_dir, settings, options)

    def translate(batch: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        try:
            return translate_batch(batch, engine, sampling, name, max_steps=max_steps, min_value_share=min_value_share)
        except GENERATION_ERRORS as exc:
            logger.error("translation of %d traces failed: %s", len(batch), exc)
            return [_output_record(r, None, False, GENERATION_ERROR, name) for r in batch]

    ordered = folder.run(
        TRANSLATIONS,
        records,
        lambda r: r["id"],
        translate,
        batch_size,
        progress,
        failure=lambda r: r["reason"] if r["reason"] == GENERATION_ERROR else None,
        desc="translations",
    )
    summary = {"backend": name, **summarize(ordered)}
    if not folder.options.sharded:
        (folder.output / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    folder.finish(summary)
    return summary


__all__ = [
    "BACKENDS",
    "Step",
    "answer_block",
    "faithful",
    "llm_translate",
    "parse_trace",
    "template_translate",
    "trace_values",
    "translate_traces",
    "translation_prompt",
    "value_share",
]
