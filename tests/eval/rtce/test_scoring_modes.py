"""`kt eval rtce --scoring strict|release`: both modes scored, both in the report; AE scored on every input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.rtce.items import load_items
from eval.rtce.scoring import ReleaseContext, score_completions
from kt_train.cli import main
from tracegen.benchmark import build_benchmark

LZW_AB = ReleaseContext("lzw", True, "ABAB")


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench")
    build_benchmark(path, seed=3, num_inputs=12, progress=False)
    return path


def test_every_ae_input_has_four_scored_tasks_and_marks_inexact_labels(benchmark: Path) -> None:
    corpus = json.loads((benchmark / "rtce.json").read_text())
    items = load_items(benchmark, ["ae"])
    assert len(items) == 4 * len(corpus)  # none dropped, although float AE fails on the long inputs
    summary = json.loads((benchmark / "summary.json").read_text())
    inexact = [i for i in items if not i.label_exact]
    assert len(inexact) == sum(summary["inexact_labels"]["ae"].values()) > 0
    assert {i.task for i in inexact} <= {"output_pred_inv", "input_pred"}
    assert all(i.answer == i.x for i in inexact if i.task == "input_pred")  # the release's label, marked
    assert all(i.prompt_style == "paper" for i in items)


@pytest.mark.parametrize(
    ("completion", "strict", "release"),
    [
        ('[ANSWER]\n{"output": [65, 66, 256]}\n[/ANSWER]', True, True),
        ('[ANSWER]\n{"output": "[65, 66, 256]"}\n[/ANSWER]', False, True),  # a list written as a string
        ("[ANSWER]\n[65, 66, 256]\n[/ANSWER]", False, True),  # a bare value
        ("[ANSWER]\n{'output': [65, 66, 256,]}\n[/ANSWER]", False, True),  # a Python literal, trailing comma
        ('[ANSWER]\n{"output": [65, 66, 257]}\n[/ANSWER]', False, False),
    ],
)
def test_release_leniencies_on_lzw(completion: str, strict: bool, release: bool) -> None:
    for mode in ("strict", "release"):
        scores = score_completions([completion], [65, 66, 256], scoring=mode, context=LZW_AB)  # type: ignore[arg-type]
        assert scores["em_strict"] == [strict] and scores["em_release"] == [release]
        assert scores["em"] == [strict if mode == "strict" else release] and scores["scoring"] == mode


def test_case_folding_is_strict_only_and_rle_runs_release_only() -> None:
    context = ReleaseContext("rle", False, "ABAB")
    scores = score_completions(['{"output": "abab"}'], "ABAB", context=context)
    assert scores["em_strict"] == [True] and scores["em_release"] == [False]
    runs = ReleaseContext("rle", True, "AAB")
    scores = score_completions(['{"output": [["A", 1], ["A", 1], ["B", 1]]}'], [["A", 2], ["B", 1]], context=runs)
    assert (
        scores["em_strict"] == [False] and scores["em_release"] == [True] and scores["release_status"] == ["correct"]
    )
    with pytest.raises(ValueError, match="needs the item"):
        score_completions(["x"], 1, scoring="release")


def test_cli_scores_predictions_in_release_mode_with_both_in_the_report(benchmark: Path, tmp_path: Path) -> None:
    items = load_items(benchmark, ["lzw"], ["output_pred"], limit=3)
    rows = [  # each item answered once right as JSON and once right as a string of the list
        {"id": i.id, "completions": [json.dumps({"output": i.answer}), json.dumps({"output": json.dumps(i.answer)})]}
        for i in items
    ]
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    args = ["eval", "rtce", "--benchmark", str(benchmark), "--output", str(out), "--predictions", str(predictions)]
    assert main([*args, "--algorithms", "lzw", "--tasks", "output_pred", "--items", "3", "--scoring", "release"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["scoring"] == "release"
    (record,) = summary["aggregated"]
    assert record["em"] == record["em_release"] == 1.0 and record["em_strict"] == 0.5
    report = (out / "report.md").read_text()
    assert "## Scoring modes (headline: release)" in report and "| 50.0 | 100.0 |" in report
    # another headline mode rescores the same completions: no --overwrite needed, nothing mixed
    assert main([*args, "--algorithms", "lzw", "--tasks", "output_pred", "--items", "3", "--scoring", "strict"]) == 0
    (record,) = json.loads((out / "summary.json").read_text())["aggregated"]
    assert record["em"] == record["em_strict"] == 0.5 and record["em_release"] == 1.0
    assert "## Scoring modes (headline: strict)" in (out / "report.md").read_text()
