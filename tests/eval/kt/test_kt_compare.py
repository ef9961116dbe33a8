"""`kt eval kt-compare`: two evaluations of one set, the change with paired bootstrap 95% CIs, on real runs of
`kt eval kt` over written predictions (gold programs for some sequences, a wrong program for the others)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from eval.kt.scoring import sequence_gzip_bits
from kt_train.cli import main

WRONG = "sequence_1 = set_list([1])\noutput = sequence_1"


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kt") / "evalset"
    assert main(["dsl", "eval-set", "--bytes", "3000", "--seed", "3", "--output", str(out), "--quiet"]) == 0
    return out


def evaluate(synthetic: Path, folder: Path, gold_share: float, limit: int | None = None) -> Path:
    """`kt eval kt` of predictions that are the gold program for the first `gold_share` of the sequences."""
    rows = pq.read_table(next((synthetic / "data").glob("*.parquet"))).to_pylist()[:limit]
    right = round(gold_share * len(rows))
    lines = [{"id": r["id"], "completions": [r["program"] if i < right else WRONG]} for i, r in enumerate(rows)]
    predictions = folder.with_suffix(".jsonl")
    predictions.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    argv = ["eval", "kt", "--dataset", str(synthetic), "--mode", "dsl", "--predictions", str(predictions)]
    assert main([*argv, "--output", str(folder), *([] if limit is None else ["--limit", str(limit)])]) == 0
    return folder


def test_the_change_and_its_interval_come_from_the_paired_sequences(
    synthetic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start, trained = evaluate(synthetic, tmp_path / "start", 0.0), evaluate(synthetic, tmp_path / "trained", 0.5)
    capsys.readouterr()
    assert main(["eval", "kt-compare", str(start), str(trained), "--output", str(tmp_path / "c.json")]) == 0
    result = json.loads((tmp_path / "c.json").read_text())
    n = result["n"]
    accuracy, rate = result["accuracy"], result["compression_rate"]
    assert accuracy["first"] == 0 and accuracy["change"] == pytest.approx(100 * round(0.5 * n) / n)
    assert 0 < accuracy["ci_low"] < accuracy["change"] < accuracy["ci_high"] <= 100
    assert rate["second"] < rate["first"] and rate["ci_low"] < rate["change"] < rate["ci_high"] < 0
    start_summary = json.loads((start / "summary.json").read_text())["metrics"]
    assert rate["first"] == pytest.approx(start_summary["compression_rate"])
    table = capsys.readouterr().out
    assert f"n = {n} sequences" in table and "| Accuracy (%) | 0.00 |" in table
    assert main(["eval", "kt-compare", str(trained), str(trained)]) == 0  # no change: a zero-width interval
    assert "| +0.0000 | [+0.0000, +0.0000] |" in capsys.readouterr().out


def test_each_run_is_set_against_gzip_per_sequence(synthetic: Path, tmp_path: Path) -> None:
    start, trained = evaluate(synthetic, tmp_path / "start", 0.0), evaluate(synthetic, tmp_path / "trained", 1.0)
    for encoding in ("bytes", "latin1-utf8"):
        out = tmp_path / f"{encoding}.json"
        assert (
            main(["eval", "kt-compare", str(start), str(trained), "--gzip-encoding", encoding, "--output", str(out)])
            == 0
        )
        result = json.loads(out.read_text())
        rows = [json.loads(line) for line in (start / "items.jsonl").read_text().splitlines()]
        raw = sum(8 * r["length"] for r in rows)
        gzip = sum(sequence_gzip_bits(r["sequence"], encoding) for r in rows) / raw
        versus = result["versus_gzip"]
        assert versus["encoding"] == encoding and versus["first"]["gzip"] == pytest.approx(gzip)
        # the raw sequences (every program wrong) against gzip, and the gold programs, far below both
        assert versus["first"]["change"] == pytest.approx(result["compression_rate"]["first"] - gzip)
        assert versus["second"]["change"] == pytest.approx(result["compression_rate"]["second"] - gzip)
        second = versus["second"]
        assert second["ci_low"] < second["change"] < second["ci_high"] < 0


def test_runs_of_other_sequences_or_unfinished_runs_are_refused_in_one_line(
    synthetic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole, part = evaluate(synthetic, tmp_path / "whole", 0.5), evaluate(synthetic, tmp_path / "part", 0.5, limit=3)
    capsys.readouterr()
    assert main(["eval", "kt-compare", str(whole), str(part)]) == 2
    assert "scored other sequences" in capsys.readouterr().err.strip().splitlines()[-1]
    assert main(["eval", "kt-compare", str(whole), str(tmp_path / "nothing")]) == 2
    assert "holds no finished `kt eval kt` run" in capsys.readouterr().err
