"""The four RTCE prediction tasks and round-trip chains."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass

import pytest

from tracegen.tasks import (
    EXAMPLE_INPUT,
    TASKS,
    Task,
    build_chain,
    make_task,
    make_tasks,
    task_prompt,
    type_name,
)

ENCODER = "def main_solution(text):\n    freq = FREQ_DICT\n    return [ord(c) for c in reversed(text)]\n"
DECODER = "def main_solution(codes):\n    freq = FREQ_DICT\n    return ''.join(chr(c) for c in reversed(codes))\n"


@dataclass(frozen=True)
class FakeAlgorithm:
    """A stand-in algorithm: reversed code points, with a frequency dict to inject."""

    name: str = "fake"
    description: str = "Reverses the string and lists its code points."
    needs_freq: bool = True

    def freq(self, text: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for c in text:
            counts[c] = counts.get(c, 0) + 1
        return counts

    def encode(self, text: str) -> tuple[int, ...]:
        return tuple(ord(c) for c in reversed(text))

    def decode(self, z, freq) -> str:
        return "".join(chr(c) for c in reversed(z))

    def encoder_source(self, freq=None) -> str:
        return ENCODER.replace("FREQ_DICT", repr(freq))

    def decoder_source(self, freq=None) -> str:
        return DECODER.replace("FREQ_DICT", repr(freq))

    def to_json(self, z):
        return list(z)


FAKE = FakeAlgorithm()


def _real_algorithms():
    algorithms = pytest.importorskip("tracegen.algorithms")
    return algorithms.ALGORITHMS


def test_task_names() -> None:
    assert [t.value for t in TASKS] == ["output_pred", "output_pred_inv", "input_pred", "input_pred_inv"]
    assert [t.label for t in TASKS] == ["O/P Pred", "O/P Pred-I", "I/P Pred", "I/P Pred-I"]


def test_prompt_structure_fake() -> None:
    x = "hello"
    freq = FAKE.freq(x)
    for record in make_tasks(FAKE, x, "demo"):
        task = Task(record.task)
        source = FAKE.encoder_source(freq) if task.shows_encoder else FAKE.decoder_source(freq)
        assert source.rstrip() in record.prompt
        assert repr(freq) in record.prompt
        assert record.prompt.count("Worked example") == 1
        assert json.dumps(EXAMPLE_INPUT) in record.prompt
        assert record.prompt.count("[ANSWER]\n{") == 2  # the worked example and the format instruction
        assert record.prompt.rstrip().endswith('[ANSWER]\n{"output": <your answer>}\n[/ANSWER]')
        assert ("inverse" in record.prompt) == task.value.endswith("_inv")
        assert json.loads(record.answer_json) == record.answer


def test_answers_fake() -> None:
    records = {r.task: r for r in make_tasks(FAKE, "abc", "demo")}
    assert records["output_pred"].answer == records["output_pred_inv"].answer == [99, 98, 97]
    assert records["input_pred"].answer == records["input_pred_inv"].answer == "abc"
    assert records["input_pred"].given == [99, 98, 97]
    assert json.dumps([99, 98, 97]) in records["input_pred"].prompt
    assert json.dumps("abc") in records["output_pred"].prompt


def test_type_name() -> None:
    assert type_name([1, 2]) == "list[int]"
    assert type_name([["a", 1], ["b", 2]]) == "list[[str, int]]"
    assert type_name(0.5) == "float"
    assert type_name("x") == "str"
    assert type_name([[1, 2], {"a": "0"}]) == "[list[int], dict]"


def test_task_prompt_accepts_any_given() -> None:
    prompt = task_prompt(FAKE, Task.INPUT_PRED, [104, 105], {"i": 1, "h": 1}, "demo")
    assert "[104, 105]" in prompt and "{'i': 1, 'h': 1}" in prompt


@pytest.mark.parametrize("steps", [1, 2, 5])
def test_chain_alternates_fake(steps: int) -> None:
    chain = build_chain(FAKE, "round", steps)
    assert len(chain) == steps
    assert [s.encodes for s in chain] == [i % 2 == 0 for i in range(steps)]
    assert [s.record.task for s in chain] == [("output_pred" if i % 2 == 0 else "input_pred") for i in range(steps)]
    for prev, nxt in itertools.pairwise(chain):
        assert nxt.record.given == prev.record.answer
    assert chain[0].record.given == "round"


def test_inverted_chain_uses_inversion_tasks() -> None:
    chain = build_chain(FAKE, "ab", 4, inverted=True)
    assert [s.record.task for s in chain] == ["output_pred_inv", "input_pred_inv"] * 2
    assert chain[-1].record.answer == "ab"


def test_real_algorithms_answers_match_outputs() -> None:
    for name, alg in _real_algorithms().items():
        for x in ("ABABAB", "hello world", EXAMPLE_INPUT):
            records = {r.task: r for r in make_tasks(alg, x)}
            freq = alg.freq(x)
            z = alg.to_json(alg.encode(x))
            assert records["output_pred"].answer == records["output_pred_inv"].answer == z, name
            assert records["input_pred_inv"].answer == x
            assert records["input_pred"].answer == alg.decode(alg.encode(x), freq)
            assert alg.encoder_source(freq).rstrip() in records["output_pred"].prompt
            assert alg.decoder_source(freq).rstrip() in records["output_pred_inv"].prompt
            assert alg.decoder_source(freq).rstrip() in records["input_pred"].prompt
            assert alg.encoder_source(freq).rstrip() in records["input_pred_inv"].prompt


def test_real_example_roundtrips() -> None:
    for name, alg in _real_algorithms().items():
        assert alg.decode(alg.encode(EXAMPLE_INPUT), alg.freq(EXAMPLE_INPUT)) == EXAMPLE_INPUT, name


def test_real_chain_returns_to_input() -> None:
    for alg in _real_algorithms().values():
        chain = build_chain(alg, "ABBA", 4)
        assert chain[1].record.answer == chain[3].record.answer == "ABBA"
        assert chain[0].record.answer == chain[2].record.answer


def test_make_task_accepts_str_task() -> None:
    assert make_task(FAKE, "input_pred", "xy", "demo").answer == "xy"
