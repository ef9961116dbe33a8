"""Trace translation (tracegen.translate): real traces of a tiny real benchmark; the LLM is a fake backend object."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tracegen.answers import extract_answer
from tracegen.benchmark import build_benchmark
from tracegen.traces import TRACES_FILE, collect_traces
from tracegen.translate import (
    SUMMARY_FILE,
    TRANSLATIONS_FILE,
    answer_block,
    faithful,
    grown_part,
    llm_translate,
    parse_trace,
    template_translate,
    trace_values,
    translate_traces,
    translation_prompt,
)
from tracegen.translate_cli import add_translate_command, register_sft_data


@pytest.fixture(scope="module")
def traces_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bench = tmp_path_factory.mktemp("rtce")
    build_benchmark(bench, seed=42, num_inputs=4, progress=False)
    output = tmp_path_factory.mktemp("traces")
    collect_traces(bench, output, workers=2, progress=False)
    return output


@pytest.fixture(scope="module")
def records(traces_dir: Path) -> list[dict[str, Any]]:
    lines = (traces_dir / TRACES_FILE).read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["kept"]]


@dataclass
class Sampling:
    temperature: float = 0.6
    max_prompt_chars: int = 32768


class FakeBackend:
    """Answers every prompt with a fixed text per record id found in the prompt, or `default`."""

    name = "fake"

    def __init__(self, texts: dict[str, str] | None = None, default: str = "") -> None:
        self.texts = texts or {}
        self.default = default
        self.calls: list[tuple[list[str], Any]] = []

    def generate(self, prompts: list[str], sampling: Any) -> list[list[str] | None]:
        self.calls.append((prompts, sampling))
        return [[self._answer(p)] for p in prompts]

    def _answer(self, prompt: str) -> str:
        for needle, text in self.texts.items():
            if needle in prompt:
                return text
        return self.default


def _faithful_text(record: dict[str, Any]) -> str:
    return "I run it: " + " then ".join(trace_values(record["trace"])) + "\n" + answer_block(record["label"])


def test_every_algorithm_and_direction_is_covered(records: list[dict[str, Any]]) -> None:
    cells = {(r["algorithm"], r["direction"]) for r in records}
    assert cells == {(a, d) for a in ("lzw", "ae", "rle", "huffman") for d in ("encode", "decode")}


def test_template_states_exact_label(records: list[dict[str, Any]]) -> None:
    for record in records:
        text = template_translate(record)
        assert text.endswith("[/ANSWER]")
        assert extract_answer(text, closed_block=True) == (True, record["label"])
        assert json.dumps(record["label"], ensure_ascii=False) in text
        assert "Line " in text
        assert faithful(text, record, 0.0)[0]
        assert text == template_translate(record)  # deterministic


def test_template_caps_steps_and_summarises(records: list[dict[str, Any]]) -> None:
    record = max(records, key=lambda r: r["trace_lines"])
    text = template_translate(record, max_steps=10)
    assert "The same pattern continues for" in text
    assert len(text.splitlines()) <= 10 + 1 + 2 + 3  # steps, summary, intro + conclusion, answer block
    assert extract_answer(text, closed_block=True) == (True, record["label"])
    with pytest.raises(ValueError):
        template_translate(record, max_steps=1)


def test_parse_trace_and_sentences() -> None:
    trace = "\n".join(
        [
            '>>> Call to main_solution in File "<main_solution>", line 1',
            "...... s = 'ab'",
            "   1 | def main_solution(s):",
            "   2 |     w = s[0]",
            ".......... w = 'a'",
            ".......... len(w) = 1",
            "   3 |     out = []",
            ".......... out = []",
            "   4 |     out.append(w)",
            ".......... out = ['a']",
            "   5 |     return out",
            "<<< Return value from main_solution: ['a']",
        ]
    )
    steps = parse_trace(trace)
    assert [s.kind for s in steps] == ["call", "line", "line", "line", "line", "return"]
    assert steps[1].assigns == [("w", "'a'")]
    record = {"trace": trace, "input": "ab", "label": ["a"]}
    text = template_translate(record)
    assert "`main_solution` is called with s = 'ab'." in text
    assert "Line 2: `w = s[0]` sets w to 'a'." in text
    assert "Line 4: `out.append(w)` adds 'a' to out." in text
    assert trace_values(trace) == ["'ab'", "'a'", "[]", "['a']"]
    assert grown_part("{1: 2}", "{1: 2, 3: 4}") == "3: 4"
    assert grown_part("[1]", "[2, 1]") is None


def test_a_narration_answers_only_in_a_closed_block() -> None:
    def answer(text: str) -> tuple[bool, object]:
        return extract_answer(text, closed_block=True)

    assert answer('x [ANSWER]{"output": [1, 2]}[/ANSWER]') == (True, [1, 2])
    assert answer('[ANSWER]\n{"output": "a"}\n[/ANSWER] [ANSWER]{"output": "b"}[/ANSWER]') == (True, "b")
    assert answer("[ANSWER]not json[/ANSWER]") == (False, None)
    assert answer('[ANSWER]{"value": 1}[/ANSWER]') == (False, None)
    assert answer("no answer") == (False, None)
    assert answer('{"output": 3}') == (False, None)  # a completion's answer (extract_answer), not a narration's
    assert answer('[ANSWER]{"output": 1}[/ANSWER] [ANSWER]{"output": 2}') == (False, None)  # the last block unclosed


def test_faithfulness_filter(records: list[dict[str, Any]]) -> None:
    record = next(r for r in records if len(trace_values(r["trace"])) >= 4)
    kept, reason = faithful(_faithful_text(record), record)
    assert kept and reason == "value_share=1.00"
    wrong = _faithful_text(record).replace(answer_block(record["label"]), answer_block("not the label"))
    assert faithful(wrong, record) == (False, "wrong_answer")
    assert faithful("no block", record) == (False, "no_answer")
    sparse = "It returns this.\n" + answer_block(record["label"])
    kept, reason = faithful(sparse, record, min_value_share=0.9)
    assert not kept and reason.startswith("low_value_share=")


def test_llm_translate_drops_long_prompts_and_passes_sampling(records: list[dict[str, Any]]) -> None:
    short = min(records, key=lambda r: len(r["trace"]))
    long = max(records, key=lambda r: len(r["trace"]))
    sampling = Sampling(max_prompt_chars=len(translation_prompt(short)) + 10)
    backend = FakeBackend(default="reasoning")
    out = llm_translate([short, long], backend, sampling)
    assert out == ["reasoning", None]
    assert len(backend.calls) == 1
    prompts, seen = backend.calls[0]
    assert seen is sampling and len(prompts) == 1
    prompt = prompts[0]
    assert short["trace"] in prompt and "[ANSWER]" in prompt and "Do not cite" in prompt
    assert "[PYTHON]\ndef main_solution" in prompt
    assert llm_translate([long], backend, sampling) == [None] and len(backend.calls) == 1


def test_translate_traces_template_resumes(traces_dir: Path, tmp_path: Path, records: list[dict[str, Any]]) -> None:
    summary = translate_traces(traces_dir, tmp_path, progress=False)
    assert summary["total"] == summary["kept"] == len(records)
    assert set(summary["algorithms"]) == {"lzw", "ae", "rle", "huffman"}
    path = tmp_path / TRANSLATIONS_FILE
    full = path.read_text(encoding="utf-8")
    rows = [json.loads(line) for line in full.splitlines()]
    assert [r["id"] for r in rows] == [r["id"] for r in records]
    assert all(r["backend"] == "template" and r["kept"] and r["reason"] is None for r in rows)
    lines = full.splitlines(keepends=True)
    path.write_text("".join(lines[:3]) + lines[3][:20], encoding="utf-8")  # lost lines and a torn one
    assert translate_traces(traces_dir, tmp_path, progress=False) == summary
    assert path.read_text(encoding="utf-8") == full
    assert json.loads((tmp_path / SUMMARY_FILE).read_text(encoding="utf-8")) == summary


def test_translate_traces_with_backend_object(traces_dir: Path, tmp_path: Path, records: list[dict[str, Any]]) -> None:
    good, bad = records[0], records[1]
    backend = FakeBackend(
        {good["trace"]: _faithful_text(good), bad["trace"]: "wrong\n" + answer_block("nope")}, default="nothing"
    )
    summary = translate_traces(traces_dir, tmp_path, backend=backend, sampling=Sampling(), progress=False)
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / TRANSLATIONS_FILE).read_text().splitlines())}
    assert rows[good["id"]]["kept"] and rows[good["id"]]["reason"] == "value_share=1.00"
    assert rows[bad["id"]]["reason"] == "wrong_answer"
    assert all(r["backend"] == "fake" for r in rows.values())
    assert summary["kept"] >= 1 and summary["reasons"].get("wrong_answer", 0) >= 1
    with pytest.raises(ValueError):
        translate_traces(traces_dir, tmp_path / "x", backend="nonsense", progress=False)
    with pytest.raises(ValueError):
        translate_traces(traces_dir, tmp_path / "y", backend="vllm", model=None, progress=False)
    with pytest.raises(FileNotFoundError):
        translate_traces(tmp_path / "none", tmp_path / "z", progress=False)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    traces = sub.add_parser("traces").add_subparsers()
    add_translate_command(traces)
    register_sft_data(sub)
    return parser


def test_cli_translate(traces_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = _parser()
    args = parser.parse_args(
        ["traces", "translate", "--traces", str(traces_dir), "--output", str(tmp_path), "--quiet"]
    )
    assert args.handler(args) == 0
    assert json.loads(capsys.readouterr().out)["kept"] > 0
    from kt_train.cli import main

    command = ["traces", "translate", "--traces", str(traces_dir), "--output", str(tmp_path)]
    assert main([*command, "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1"]) == 2  # no --model
    assert main(["traces", "translate", "--traces", str(tmp_path / "no"), "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("kt: error:") for line in err)


def test_backend_object_gets_default_sampling(traces_dir: Path, tmp_path: Path, records: list[dict[str, Any]]) -> None:
    generation = pytest.importorskip("kt_train.generation")
    backend = FakeBackend(default="nothing")
    translate_traces(traces_dir, tmp_path, backend=backend, progress=False)
    sampling = backend.calls[0][1]
    assert isinstance(sampling, generation.SamplingConfig)
    assert (sampling.temperature, sampling.top_p, sampling.top_k) == (0.6, 0.95, 20)
    assert sampling.max_new_tokens == 8192 and sampling.max_prompt_chars == 32768
    sent = sum(len(prompts) for prompts, _ in backend.calls)
    assert 0 < sent < len(records)  # prompts over 32,768 characters are not sent
