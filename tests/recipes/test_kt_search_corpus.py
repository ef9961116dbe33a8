"""recipes/tools/kt_search_corpus.py: the correct programs of a real `kt eval kt` run (over written predictions: the
gold program for half the sequences, a wrong one for the rest), with replay rows of a generated corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dsl.interpreter import run_program
from dsl.seqcoder import build_kt_corpus
from kt_train.cli import main as kt_main

from .test_recipe_configs import load_recipe

WRONG = "sequence_1 = set_list([1])\noutput = sequence_1"


@pytest.mark.slow
def test_the_corpus_holds_each_correct_program_once_and_replayed_segment_programs(tmp_path: Path) -> None:
    synthetic = tmp_path / "evalset"
    assert kt_main(["dsl", "eval-set", "--bytes", "2000", "--seed", "3", "--output", str(synthetic), "--quiet"]) == 0
    rows = pq.read_table(next((synthetic / "data").glob("*.parquet"))).to_pylist()
    lines = [{"id": r["id"], "completions": [r["program"] if i % 2 else WRONG]} for i, r in enumerate(rows)]
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    search = tmp_path / "search"
    argv = ["eval", "kt", "--dataset", str(synthetic), "--mode", "dsl", "--predictions", str(predictions)]
    assert kt_main([*argv, "--output", str(search)]) == 0
    replay = build_kt_corpus(tmp_path / "corpus", num_pairs=30, seed=1, progress=False)

    recipe = load_recipe("tools/kt_search_corpus")
    out = tmp_path / "out"
    assert (
        recipe.main(["--search", str(search), "--replay", str(replay), "--replay_ratio", "2", "--output", str(out)])
        == 0
    )
    corpus = pq.read_table(out / "data").to_pylist()
    found = [r for r in corpus if r["source"] == "search"]
    assert sorted(r["program"] for r in found) == sorted(r["program"] for i, r in enumerate(rows) if i % 2)
    assert sum(r["source"] == "replay" for r in corpus) == 2 * len(found)
    assert all(run_program(r["program"]) == r["sequence"] for r in corpus)  # every row prints its sequence

    assert recipe.main(["--search", str(tmp_path / "nothing"), "--output", str(out)]) == 2  # one line, exit 2
    lines = [{"id": r["id"], "completions": [WRONG]} for r in rows]
    predictions.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert kt_main([*argv, "--output", str(tmp_path / "none")]) == 0
    with pytest.raises(ValueError, match="no correct program"):
        recipe.build_search_corpus(recipe.SearchCorpusArguments(search=tmp_path / "none", output=out))
