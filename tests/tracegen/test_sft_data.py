"""SFT corpus (tracegen.sft_data) from template translations of real traces of a tiny real benchmark."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import datasets
import pytest

from tracegen.answers import extract_answer
from tracegen.benchmark import build_benchmark
from tracegen.sft_data import COMBINED, PARQUET_FILE, build_sft_data, chat_length, load_eval_ids
from tracegen.tasks import Task, make_task
from tracegen.traces import collect_traces
from tracegen.translate import TRANSLATIONS_FILE, translate_traces
from tracegen.translate_cli import add_translate_command, register_sft_data

ALGORITHMS = ("ae", "huffman", "lzw", "rle")


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    bench = tmp_path_factory.mktemp("rtce")
    build_benchmark(bench, seed=42, num_inputs=4, progress=False)
    traces = tmp_path_factory.mktemp("traces")
    collect_traces(bench, traces, workers=2, progress=False)
    translations = tmp_path_factory.mktemp("translations")
    translate_traces(traces, translations, progress=False)
    return bench, translations


def _translations(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (directory / TRANSLATIONS_FILE).read_text(encoding="utf-8").splitlines()]


def _load(directory: Path) -> datasets.Dataset:
    cache = directory.parent / f"hf-cache-{directory.name}"  # own cache: datasets may reuse a same-named directory's
    return datasets.load_dataset(str(directory), split="train", cache_dir=str(cache))


class FakeTokenizer:
    def apply_chat_template(self, messages: list[dict[str, str]], tokenize: bool = False) -> str:
        assert tokenize is False
        return "".join(f"<|{m['role']}|>\n{m['content']}<|end|>\n" for m in messages)


def test_build_writes_datasets_and_holds_out(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    bench, translations = dirs
    rows = _translations(translations)
    held = rows[0]["item_id"]
    summary = build_sft_data(translations, tmp_path, benchmark_dir=bench, eval_ids={held})
    expected = [r for r in rows if r["item_id"] != held]
    assert summary["rows"] == len(expected) and summary["dropped"]["held_out"] == len(rows) - len(expected)
    assert summary["datasets"] == [*ALGORITHMS, COMBINED]
    combined = _load(tmp_path / COMBINED)
    assert sorted(combined["id"]) == combined["id"] == sorted(r["id"] for r in expected)
    assert held not in set(combined["item_id"])
    for name in ALGORITHMS:
        part = _load(tmp_path / name)
        assert set(part["algorithm"]) == {name}
        assert len(part) == sum(summary["counts"][name].values())
        assert f"- {name} / " in (tmp_path / name / "README.md").read_text()
    for row in combined:
        user, assistant = row["messages"]
        assert user["role"] == "user" and assistant["role"] == "assistant"
        assert "[PYTHON]\ndef main_solution" in user["content"]
        assert extract_answer(assistant["content"], closed_block=True) == (True, json.loads(row["answer_json"]))
        assert row["task"] == (Task.OUTPUT_PRED if row["direction"] == "encode" else Task.INPUT_PRED).value


def test_prompts_match_tasks_without_benchmark(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    bench, translations = dirs
    build_sft_data(translations, tmp_path / "a", benchmark_dir=bench)
    build_sft_data(translations, tmp_path / "b")
    for part in (COMBINED, "rle"):
        first = (tmp_path / "a" / part / "data" / PARQUET_FILE).read_bytes()
        assert first == (tmp_path / "b" / part / "data" / PARQUET_FILE).read_bytes()  # same prompts, deterministic
    record = next(r for r in _translations(translations) if r["algorithm"] == "rle" and r["direction"] == "encode")
    row = next(r for r in _load(tmp_path / "b" / COMBINED) if r["id"] == record["id"])
    assert row["messages"][0]["content"] == make_task(_rle(), Task.OUTPUT_PRED, record["input"]).prompt


def _rle() -> Any:
    from tracegen.algorithms import get_algorithm

    return get_algorithm("rle")


def test_max_chars_and_tokenizer(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    _, translations = dirs
    full = build_sft_data(translations, tmp_path / "full")
    lengths = sorted(_load(tmp_path / "full" / COMBINED)["num_chars"])
    limit = lengths[len(lengths) // 2]
    cut = build_sft_data(translations, tmp_path / "cut", max_chars=limit)
    assert cut["rows"] == sum(n <= limit for n in lengths) < full["rows"]
    assert cut["dropped"]["too_long"] == full["rows"] - cut["rows"]
    assert "dropped (" in (tmp_path / "cut" / COMBINED / "README.md").read_text()
    tokenized = build_sft_data(translations, tmp_path / "tok", tokenizer=FakeTokenizer())
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert chat_length(messages) == 2 and chat_length(messages, FakeTokenizer()) > 2
    assert min(_load(tmp_path / "tok" / COMBINED)["num_chars"]) > lengths[0]
    assert tokenized["rows"] == full["rows"]
    with pytest.raises(ValueError):
        build_sft_data(translations, tmp_path / "bad", max_chars=0)
    with pytest.raises(FileNotFoundError):
        build_sft_data(tmp_path / "none", tmp_path / "bad")


def test_eval_ids_file(tmp_path: Path) -> None:
    (tmp_path / "ids.json").write_text('["a", "b"]')
    (tmp_path / "ids.txt").write_text("a\n\nb\n")
    assert load_eval_ids(tmp_path / "ids.json") == load_eval_ids(str(tmp_path / "ids.txt")) == {"a", "b"}
    assert load_eval_ids(None) == set() and load_eval_ids(["c"]) == {"c"}


def test_cli_sft_data(dirs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench, translations = dirs
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    traces = sub.add_parser("traces").add_subparsers()
    add_translate_command(traces)
    register_sft_data(sub)
    item = _translations(translations)[0]["item_id"]
    (tmp_path / "eval.txt").write_text(item + "\n")
    argv = [
        "sft-data",
        "build",
        "--translations",
        str(translations),
        "--output",
        str(tmp_path / "out"),
        "--benchmark",
        str(bench),
        "--eval-ids",
        str(tmp_path / "eval.txt"),
    ]
    args = parser.parse_args(argv)
    assert args.handler(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["dropped"]["held_out"] > 0 and summary["eval_ids"] == 1
    assert len(_load(tmp_path / "out" / COMBINED)) == summary["rows"]
    args = parser.parse_args(["sft-data", "build", "--translations", str(tmp_path / "no"), "--output", str(tmp_path)])
    assert args.handler(args) == 2
    assert "kt: error:" in capsys.readouterr().err


def _load_split(directory: Path, split: str) -> datasets.Dataset:
    cache = directory.parent / f"hf-cache-{directory.name}-{split}"
    return datasets.load_dataset(str(directory), split=split, cache_dir=str(cache))


def test_answer_only_and_both_rows_and_the_held_out_test_split(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    """`completions="answer"`: the assistant turn is the answer block alone; `both`: a trace row and an answer row
    per record; the held-out items' rows are the `test` split, never in `train`."""
    bench, translations = dirs
    records = [r for r in _translations(translations) if r["kept"]]
    held = records[0]["item_id"]
    answer = build_sft_data(translations, tmp_path / "answer", bench, {held}, completions="answer")
    both = build_sft_data(translations, tmp_path / "both", bench, {held}, completions="both")
    trained = [r for r in records if r["item_id"] != held]
    assert answer["rows"] == len(trained) and both["rows"] == 2 * len(trained)
    assert answer["test_rows"] == len(records) - len(trained) > 0 and both["test_rows"] == 2 * answer["test_rows"]
    rows = _load(tmp_path / "answer" / COMBINED)
    for row in rows:
        reply = row["messages"][1]["content"]
        assert row["id"].endswith("/answer") and reply == f'[ANSWER]\n{{"output": {row["answer_json"]}}}\n[/ANSWER]'
    ids = _load(tmp_path / "both" / COMBINED)["id"]
    assert sorted(i.removesuffix("/answer") for i in ids) == sorted(2 * [r["id"] for r in trained])
    for directory in (tmp_path / "answer" / COMBINED, tmp_path / "answer" / "rle"):
        test = _load_split(directory, "test")
        assert set(test["item_id"]) == {held} and held not in set(_load(directory)["item_id"])
    with pytest.raises(ValueError, match="completions"):
        build_sft_data(translations, tmp_path / "bad", bench, completions="trace+answer")
