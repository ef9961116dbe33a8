"""`kt eval kt --search K`: the greedy program and K-1 samples a sequence, each checked by the interpreter; an item
keeps the shortest correct one, and the summary reports the greedy program alone beside the search."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dsl.seqcoder_model import SeqCoderInit, save_seqcoder
from eval.kt.dataset import load_kt_dataset
from eval.kt.evaluate import COMPLETIONS_FILE, KTEvalConfig, run_kt_eval, score_items
from eval.kt.report import REPORT_FILE
from eval.kt.scoring import search_summary
from kt_train.cli import main


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kt") / "evalset"
    assert main(["dsl", "eval-set", "--bytes", "400", "--seed", "3", "--output", str(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def seqcoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("seqcoder") / "model"
    save_seqcoder(out, SeqCoderInit(size="tiny", seed=0))
    return out


def test_the_search_keeps_the_greedy_program_first_and_reports_it_alone(
    synthetic: Path, seqcoder: Path, tmp_path: Path
) -> None:
    common = {"dataset": str(synthetic), "mode": "dsl", "model": str(seqcoder), "limit": 3, "max_new_tokens": 12}
    greedy = run_kt_eval(KTEvalConfig(output=str(tmp_path / "greedy"), **common), progress=False)
    config = KTEvalConfig(output=str(tmp_path / "search"), search=3, temperature=1.0, **common)
    searched = run_kt_eval(config, progress=False)
    greedy_rows = [json.loads(line) for line in (tmp_path / "greedy" / COMPLETIONS_FILE).read_text().splitlines()]
    rows = [json.loads(line) for line in (tmp_path / "search" / COMPLETIONS_FILE).read_text().splitlines()]
    assert [len(r["completions"]) for r in rows] == [3, 3, 3]
    assert [r["completions"][0] for r in rows] == [r["completions"][0] for r in greedy_rows]
    assert any(len(set(r["completions"])) > 1 for r in rows)  # the other two are sampled
    search = searched["metrics"]["search"]
    assert search["k"] == 3 and search["programs_checked"] == 9
    for key in ("accuracy", "compression_rate", "executable"):
        assert search["greedy"][key] == greedy["metrics"][key]
    assert "Search over 3 programs a sequence (9 checked)" in (tmp_path / "search" / REPORT_FILE).read_text()
    assert "search" not in greedy["metrics"]


def reversed_twice(program: str) -> str:
    """The same output, two lines longer."""
    *body, last = program.splitlines()
    result = last.split(" = ")[1]
    n = len(body) + 1
    twice = [f"sequence_{n} = reverse_list({result})", f"sequence_{n + 1} = reverse_list(sequence_{n})"]
    return "\n".join([*body, *twice, f"output = sequence_{n + 1}"])


def test_samples_that_are_correct_or_shorter_than_the_greedy_program_are_counted(synthetic: Path) -> None:
    rows = pq.read_table(next((synthetic / "data").glob("*.parquet"))).to_pylist()[:3]
    gold = [row["program"] for row in rows]
    longer = [reversed_twice(program) for program in gold]
    wrong = "sequence_1 = set_list([1])\noutput = sequence_1"
    completions = {  # greedy first: wrong then gold; longer then gold; gold then wrong
        rows[0]["id"]: [wrong, gold[0]],
        rows[1]["id"]: [longer[1], gold[1]],
        rows[2]["id"]: [gold[2], wrong],
    }
    dataset = load_kt_dataset(synthetic, limit=3)
    config = KTEvalConfig(dataset=str(synthetic), output="unused", mode="dsl", predictions="unused")
    scored = score_items(dataset, completions, config, progress=False)
    assert [r["samples"][0]["verdict"] for r in scored] == ["wrong_output", "correct", "correct"]
    assert [r["program"] for r in scored] == gold  # each item keeps its shortest correct program
    summary = search_summary(scored, dataset.symbol_bits, k=2)
    assert summary["greedy"]["accuracy"] == pytest.approx(2 / 3)
    assert (summary["items_found_by_samples"], summary["items_shortened_by_samples"]) == (1, 1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"search": 0}, "--search must be >= 1"),
        ({"search": 4}, "needs --model, --temperature > 0"),
        ({"search": 4, "temperature": 1.0, "num_samples": 2}, "--num-samples 1"),
    ],
)
def test_a_search_that_cannot_work_is_refused(synthetic: Path, seqcoder: Path, options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KTEvalConfig(dataset=str(synthetic), output="unused", mode="dsl", model=str(seqcoder), **options)
