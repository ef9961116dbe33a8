"""RTCE GRPO rows (tracegen.rl_data) and the one-prompt round trip (tracegen.tasks.roundtrip_prompt)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tracegen.algorithms import ALGORITHMS, get_algorithm
from tracegen.benchmark import CORPUS_FILE, build_benchmark
from tracegen.rl_data import ANSWER_PATTERN, ROUNDTRIP_PATTERN, TASK_NAMES, rtce_rl_rows
from tracegen.tasks import ROUNDTRIP_FORMAT, dumps, roundtrip_prompt

COLUMNS = ("prompt", "id", "task", "algorithm", "answer_json", "x", "freq_json", "format_pattern")


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rtce")
    build_benchmark(path, seed=42, num_inputs=4, progress=False)
    return path


@pytest.fixture(scope="module")
def corpus(bench: Path) -> list[dict]:
    return json.loads((bench / CORPUS_FILE).read_text(encoding="utf-8"))


def usable(corpus: list[dict], algorithm: str) -> list[dict]:
    return [e for e in corpus if e["algorithms"][algorithm]["roundtrip_ok"]]


def test_one_row_per_task_and_a_roundtrip_row_per_input_and_algorithm(bench: Path, corpus: list[dict]) -> None:
    rows = rtce_rl_rows(bench)
    expected = sum(len(usable(corpus, name)) for name in ALGORITHMS) * (len(TASK_NAMES) + 1)
    assert len(rows) == expected and len({r["id"] for r in rows}) == expected
    for row in rows:
        assert tuple(row) == COLUMNS
        assert [type(row[c]) for c in COLUMNS[1:]] == [str] * (len(COLUMNS) - 1)
        assert row["prompt"][0]["role"] == "user" and len(row["prompt"]) == 1
    by_id = {e["id"]: e for e in corpus}
    for row in rows:
        entry = by_id[row["id"].split("/")[0]]
        per_algorithm = entry["algorithms"][row["algorithm"]]
        assert row["x"] == entry["input"] and json.loads(row["freq_json"]) == per_algorithm["freq"]
        if row["task"] == "roundtrip":
            assert row["answer_json"] == dumps(per_algorithm["z"]) and row["format_pattern"] == ROUNDTRIP_PATTERN
        else:
            record = per_algorithm["tasks"][row["task"]]
            assert (row["prompt"][0]["content"], row["answer_json"]) == (record["prompt"], record["answer_json"])
            assert row["format_pattern"] == ANSWER_PATTERN


def test_selection_exclusion_and_limit(bench: Path, corpus: list[dict], tmp_path: Path) -> None:
    rows = rtce_rl_rows(bench, algorithms=["rle"], tasks=["output_pred"], roundtrip=False)
    assert [r["task"] for r in rows] == ["output_pred"] * len(usable(corpus, "rle"))
    held_out = sorted(e["id"] for e in corpus)[:2]
    ids_file = tmp_path / "eval_ids.json"
    ids_file.write_text(json.dumps(held_out))
    for exclude in (held_out, ids_file):
        kept = rtce_rl_rows(bench, exclude_ids=exclude)
        assert kept and not {r["id"].split("/")[0] for r in kept} & set(held_out)
    limited = rtce_rl_rows(bench, algorithms=["lzw", "rle"], limit=1)
    assert len(limited) == 2 * (len(TASK_NAMES) + 1)
    with pytest.raises(ValueError, match="unknown task"):
        rtce_rl_rows(bench, tasks=["nope"])
    with pytest.raises(ValueError, match="unknown algorithm"):
        rtce_rl_rows(bench, algorithms=["zip"])
    with pytest.raises(FileNotFoundError):
        rtce_rl_rows(tmp_path)


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_roundtrip_prompt_shows_both_sources_the_input_and_a_consistent_example(name: str) -> None:
    algorithm = get_algorithm(name)
    x = "abracadabra"
    prompt = roundtrip_prompt(algorithm, x, algorithm.freq(x))
    assert algorithm.encoder_source(algorithm.freq(x)).strip() in prompt
    assert algorithm.decoder_source(algorithm.freq(x)).strip() in prompt
    assert f"Input: {dumps(x)}" in prompt and prompt.rstrip().endswith(ROUNDTRIP_FORMAT)
    example = re.search(r"Worked example.*?\[ANSWER\]\n(.*?)\n\[/ANSWER\]", prompt, re.S)
    assert example is not None
    answer = json.loads(example.group(1))
    z = algorithm.from_json(answer["output"])
    assert algorithm.decode(z, algorithm.freq("AAABABBB")) == answer["decoded"] == "AAABABBB"


def test_format_patterns() -> None:
    answer, roundtrip = re.compile(ANSWER_PATTERN, re.S), re.compile(ROUNDTRIP_PATTERN, re.S)
    block = '[ANSWER]\n{"output": [1, 2]}\n[/ANSWER]'
    both = '[ANSWER]\n{"output": [["a", 2]], "decoded": "aa"}\n[/ANSWER]'
    assert answer.fullmatch(block) and answer.fullmatch(f"Step 1: think.\n{block}") and answer.fullmatch(both)
    assert roundtrip.fullmatch(both) and roundtrip.fullmatch(f"reasoning\n{both}")
    for bad in (f"{block}\n{block}", f"{block} and more", '[ANSWER]{"answer": 1}[/ANSWER]', "", '{"output": 1}'):
        assert not answer.fullmatch(bad)
    assert not roundtrip.fullmatch(block) and not roundtrip.fullmatch(f"{both}{both}")
