"""The four RTCE prediction tasks and round-trip chains: prompts (Appendix F style) with their reference answers.

O/P Pred (x, encoder -> z), O/P Pred-I (x, decoder -> z, by inverting the decoder), I/P Pred (z, decoder -> x) and
I/P Pred-I (z, encoder -> x, by inverting the encoder). Every prompt asks for `[ANSWER]{"output": <value>}[/ANSWER]`.
The default style, `paper`, frames it as the paper and its release do (`tracegen.prompts`: one generic worked
example); `demo` holds an instruction, the `main_solution` source, one worked example for the same algorithm and task
and the query.

Labels are what the shown code returns. Where it returns nothing (the float AE decoder runs past the text on most
long inputs, Listing 4), the label is the release's (x for I/P Pred, enc(x) for O/P Pred-I) and the record is marked
`label_exact = False`, never dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from tracegen.prompts import SYSTEM_MESSAGE, PromptStyle, paper_prompt


class Algorithm(Protocol):
    """What the tasks need from a `tracegen.algorithms` entry."""

    name: str
    needs_freq: bool

    def freq(self, text: str) -> dict[str, int] | None: ...
    def encode(self, text: str) -> Any: ...
    def decode(self, z: Any, freq: dict[str, int] | None) -> str: ...
    def encoder_source(self, freq: dict[str, int] | None = None) -> str: ...
    def decoder_source(self, freq: dict[str, int] | None = None) -> str: ...
    def to_json(self, z: Any) -> Any: ...
    def from_json(self, value: Any) -> Any: ...


class Task(StrEnum):
    """The four prediction tasks."""

    OUTPUT_PRED = "output_pred"
    OUTPUT_PRED_INV = "output_pred_inv"
    INPUT_PRED = "input_pred"
    INPUT_PRED_INV = "input_pred_inv"

    @property
    def label(self) -> str:
        """The paper's name for the task."""
        return TASK_LABELS[self]

    @property
    def predicts_z(self) -> bool:
        """True for the two output-prediction tasks (the answer is the encoded value)."""
        return self in (Task.OUTPUT_PRED, Task.OUTPUT_PRED_INV)

    @property
    def shows_encoder(self) -> bool:
        """True when the prompt shows the encoder's source (O/P Pred and I/P Pred-I)."""
        return self in (Task.OUTPUT_PRED, Task.INPUT_PRED_INV)


TASKS: tuple[Task, ...] = tuple(Task)
TASK_LABELS = {
    Task.OUTPUT_PRED: "O/P Pred",
    Task.OUTPUT_PRED_INV: "O/P Pred-I",
    Task.INPUT_PRED: "I/P Pred",
    Task.INPUT_PRED_INV: "I/P Pred-I",
}
EXAMPLE_INPUT = "AAABABBB"
_STEP_BY_STEP = "Think through the execution step by step in your head; do not write or run any code."
INSTRUCTIONS = {
    Task.OUTPUT_PRED: (
        "You are given a Python function `main_solution` and an input for it. Predict the exact value that "
        f"`main_solution` returns for this input. {_STEP_BY_STEP}"
    ),
    Task.OUTPUT_PRED_INV: (
        "You are given a Python function `main_solution` and a string. The function is a decoder: it turns an "
        "encoded value back into a string. Derive its inverse, an encoder `main_solution_inverse`, and use that "
        "inverse logic to predict the encoded value that `main_solution` decodes into exactly this string. Do not "
        f"simply run the decoder forwards. {_STEP_BY_STEP}"
    ),
    Task.INPUT_PRED: (
        "You are given a Python function `main_solution` and an encoded value to pass to it. Predict the exact "
        f"string that `main_solution` returns for this value. {_STEP_BY_STEP}"
    ),
    Task.INPUT_PRED_INV: (
        "You are given a Python function `main_solution` and one of its return values. The function is an encoder. "
        "Derive its inverse, a decoder `main_solution_inverse`, and use that inverse logic to predict the input "
        "string for which `main_solution` returns exactly this value. Do not simply run the encoder forwards. "
        f"{_STEP_BY_STEP}"
    ),
}
GIVEN_LABELS = {
    Task.OUTPUT_PRED: "Input",
    Task.OUTPUT_PRED_INV: "String to obtain by decoding",
    Task.INPUT_PRED: "Input",
    Task.INPUT_PRED_INV: "Return value of main_solution",
}
ANSWER_FORMAT = '[ANSWER]\n{"output": <your answer>}\n[/ANSWER]'
ROUNDTRIP_TASK = "roundtrip"  # the round trip in one prompt (GRPO): the encoding of x and its decoding, together
ROUNDTRIP_INSTRUCTION = (
    "You are given an encoder and its decoder, two Python functions both named `main_solution`, and an input "
    "string. First predict the exact value that the encoder returns for this input. Then run the decoder on YOUR "
    "predicted value (not on the input) and predict the exact string it returns. "
    f"{_STEP_BY_STEP}"
)
ROUNDTRIP_FORMAT = (
    '[ANSWER]\n{"output": <encoded value>, "decoded": <the string the decoder returns for that encoded value>}\n'
    "[/ANSWER]"
)


@dataclass(frozen=True)
class TaskRecord:
    """One prompt with its reference answer (JSON-able), the answer's canonical JSON text and whether the shown code
    gives that answer (`label_exact`; False: the release's label, the shown code returns nothing)."""

    task: str
    algorithm: str
    given: Any
    prompt: str
    answer: Any
    answer_json: str
    label_exact: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "algorithm": self.algorithm,
            "given": self.given,
            "prompt": self.prompt,
            "answer": self.answer,
            "answer_json": self.answer_json,
            "label_exact": self.label_exact,
        }


@dataclass(frozen=True)
class ChainStep:
    """One step of a round-trip chain x -> z -> x' -> z' ...: its task record and whether it encodes."""

    index: int
    encodes: bool
    record: TaskRecord


def dumps(value: Any) -> str:
    """Canonical JSON text of a value, as it appears in prompts and in `answer_json`."""
    return json.dumps(value, ensure_ascii=False)


def type_name(value: Any) -> str:
    """A short, readable type of a JSON value: `list[int]`, `list[[str, int]]`, `float`, `str`."""
    if isinstance(value, list):
        kinds = sorted({type_name(v) for v in value})
        if not kinds:
            return "list"
        if len(kinds) > 1 and len(value) <= 3:
            return "[" + ", ".join(type_name(v) for v in value) + "]"
        return f"list[{' | '.join(kinds)}]"
    if isinstance(value, dict):
        return "dict"
    return {bool: "bool", int: "int", float: "float", str: "str", type(None): "null"}.get(type(value), "value")


def source_for(algorithm: Algorithm, task: Task, freq: dict[str, int] | None) -> str:
    """The `main_solution` source the task shows: the encoder for O/P Pred and I/P Pred-I, else the decoder."""
    return algorithm.encoder_source(freq) if task.shows_encoder else algorithm.decoder_source(freq)


def system_message(style: PromptStyle) -> str | None:
    """The system message that goes with prompts of `style` (None: the user prompt alone)."""
    return None if style == "demo" else SYSTEM_MESSAGE


def python_value(algorithm: Algorithm, task: Task, given_json: Any) -> Any:
    """The given value as the listing takes or returns it (RLE tuples, the Huffman triple); JSON as is if invalid."""
    if task.predicts_z:
        return given_json
    try:
        return algorithm.from_json(given_json)
    except (ValueError, TypeError):
        return given_json


def task_prompt(
    algorithm: Algorithm, task: Task, given_json: Any, freq: dict[str, int] | None, style: PromptStyle = "paper"
) -> str:
    """The full prompt for showing `given_json` (x for output tasks, JSON z for input tasks) to a model."""
    if style == "release":
        raise ValueError("release prompts are rendered by the release's own code (tracegen.release_prompts)")
    if style != "demo":
        return paper_prompt(
            algorithm,
            shows_encoder=task.shows_encoder,
            inversion=task in (Task.OUTPUT_PRED_INV, Task.INPUT_PRED_INV),
            given=python_value(algorithm, task, given_json),
            source=source_for(algorithm, task, freq),
            blind=style == "release-blind",
        )
    example = worked_example(algorithm, task)
    parts = [
        INSTRUCTIONS[task],
        f"[PYTHON]\n{source_for(algorithm, task, freq).rstrip()}\n[/PYTHON]",
        f"The answer is a JSON value of type {type_name(example.answer)}. Put it in [ANSWER] and [/ANSWER] tags as "
        '{"output": <your answer>}, following the example.',
        _example_block(algorithm, task, example),
        f"Now the actual query.\n{GIVEN_LABELS[task]}: {dumps(given_json)}",
        f"Return only:\n{ANSWER_FORMAT}",
    ]
    return "\n\n".join(parts) + "\n"


@dataclass(frozen=True)
class _Example:
    given: Any
    answer: Any
    freq: dict[str, int] | None


def worked_example(algorithm: Algorithm, task: Task) -> _Example:
    """The fixed worked example (EXAMPLE_INPUT) for this algorithm and task."""
    freq = algorithm.freq(EXAMPLE_INPUT)
    z = algorithm.encode(EXAMPLE_INPUT)
    if task.predicts_z:
        return _Example(EXAMPLE_INPUT, algorithm.to_json(z), freq)
    answer = EXAMPLE_INPUT if task is Task.INPUT_PRED_INV else algorithm.decode(z, freq)
    return _Example(algorithm.to_json(z), answer, freq)


def _example_block(algorithm: Algorithm, task: Task, example: _Example) -> str:
    note = ""
    if algorithm.needs_freq:
        note = f" (for this example FREQ_DICT is {example.freq!r}, built from the example's own string)"
    return (
        f"Worked example{note}:\n{GIVEN_LABELS[task]}: {dumps(example.given)}\n"
        f'[ANSWER]\n{{"output": {dumps(example.answer)}}}\n[/ANSWER]'
    )


def roundtrip_prompt(algorithm: Algorithm, x: str, freq: dict[str, int] | None) -> str:
    """The round trip in one prompt: encoder and decoder sources, one worked example, x; the answer holds the model's
    encoding z^ (`output`) and its decoding of z^ (`decoded`) in one `[ANSWER]` block (`ROUNDTRIP_FORMAT`)."""
    example = worked_example(algorithm, Task.OUTPUT_PRED)
    decoded = safe_decode(algorithm, algorithm.encode(EXAMPLE_INPUT), example.freq)
    note = ""
    if algorithm.needs_freq:
        note = f" (for this example FREQ_DICT is {example.freq!r}, built from the example's own string)"
    parts = [
        ROUNDTRIP_INSTRUCTION,
        f"Encoder:\n[PYTHON]\n{algorithm.encoder_source(freq).rstrip()}\n[/PYTHON]",
        f"Decoder:\n[PYTHON]\n{algorithm.decoder_source(freq).rstrip()}\n[/PYTHON]",
        f"The encoded value is a JSON value of type {type_name(example.answer)} and the decoded value a string. Put "
        'both in [ANSWER] and [/ANSWER] tags as {"output": <encoded value>, "decoded": <decoded string>}, following '
        "the example.",
        f"Worked example{note}:\nInput: {dumps(example.given)}\n"
        f'[ANSWER]\n{{"output": {dumps(example.answer)}, "decoded": {dumps(decoded)}}}\n[/ANSWER]',
        f"Now the actual query.\nInput: {dumps(x)}",
        f"Return only:\n{ROUNDTRIP_FORMAT}",
    ]
    return "\n\n".join(parts) + "\n"


def make_task(
    algorithm: Algorithm, task: Task | str, x: str, style: PromptStyle = "paper", prompt: str | None = None
) -> TaskRecord:
    """The task record for input string `x` (z, FREQ_DICT and the answer are computed from `x`; the prompt too,
    unless `prompt` gives it, as the release's renderer does for the `release` style).

    O/P Pred and I/P Pred-I are exact by construction (enc(x) = z). I/P Pred is labelled with dec(z) where the
    decoder returns, else x; O/P Pred-I with z, exact where dec(z) = x.
    """
    task = Task(task)
    freq = algorithm.freq(x)
    z = algorithm.encode(x)
    z_json = algorithm.to_json(z)
    decoded = None if task in (Task.OUTPUT_PRED, Task.INPUT_PRED_INV) else safe_decode(algorithm, z, freq)
    if task.predicts_z:
        given, answer = x, z_json
        exact = task is Task.OUTPUT_PRED or decoded == x
    else:
        given = z_json
        answer = decoded if task is Task.INPUT_PRED and decoded is not None else x
        exact = task is Task.INPUT_PRED_INV or decoded is not None
    return _record(algorithm, task, given, answer, freq, style, exact, prompt)


def safe_decode(algorithm: Algorithm, z: Any, freq: dict[str, int] | None) -> str | None:
    """dec(z), or None where the reference decoder fails (float AE on inputs it cannot represent)."""
    try:
        return algorithm.decode(z, freq)
    except (ValueError, ArithmeticError, KeyError, IndexError):
        return None


def make_tasks(algorithm: Algorithm, x: str, style: PromptStyle = "paper") -> list[TaskRecord]:
    """All four task records for `x`, in TASKS order."""
    return [make_task(algorithm, task, x, style) for task in TASKS]


def _record(
    algorithm: Algorithm,
    task: Task,
    given: Any,
    answer: Any,
    freq: dict[str, int] | None,
    style: PromptStyle = "demo",
    exact: bool = True,
    prompt: str | None = None,
) -> TaskRecord:
    prompt = task_prompt(algorithm, task, given, freq, style) if prompt is None else prompt
    return TaskRecord(task.value, algorithm.name, given, prompt, answer, dumps(answer), exact)


def build_chain(algorithm: Algorithm, x: str, steps: int, *, inverted: bool = False) -> list[ChainStep]:
    """`steps` alternating prompts x -> z -> x' -> z' ... with expected values from actually running the code.

    Encoding steps use O/P Pred (O/P Pred-I when `inverted`), decoding steps I/P Pred (I/P Pred-I when `inverted`).
    Each step's given value is the previous step's expected answer; FREQ_DICT is that of the string last encoded.
    The chain stops early after a decoding step whose reference decoder fails (answer None).
    """
    encode_task = Task.OUTPUT_PRED_INV if inverted else Task.OUTPUT_PRED
    decode_task = Task.INPUT_PRED_INV if inverted else Task.INPUT_PRED
    chain: list[ChainStep] = []
    text, z, freq = x, None, None
    for index in range(steps):
        if index % 2 == 0:
            freq, z = algorithm.freq(text), algorithm.encode(text)
            record = _record(algorithm, encode_task, text, algorithm.to_json(z), freq)
        else:
            answer = text if inverted else safe_decode(algorithm, z, freq)
            record = _record(algorithm, decode_task, algorithm.to_json(z), answer, freq)
        chain.append(ChainStep(index, index % 2 == 0, record))
        if index % 2 == 1:
            if answer is None:
                break
            text = answer
    return chain


__all__ = [
    "EXAMPLE_INPUT",
    "ROUNDTRIP_FORMAT",
    "ROUNDTRIP_TASK",
    "TASKS",
    "ChainStep",
    "Task",
    "TaskRecord",
    "build_chain",
    "dumps",
    "make_task",
    "make_tasks",
    "python_value",
    "roundtrip_prompt",
    "safe_decode",
    "system_message",
    "task_prompt",
    "type_name",
    "worked_example",
]
