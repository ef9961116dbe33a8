"""The NL report: every file on a small full table, the missing-data lines on thin tables, and an offline W&B run."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from eval.nl.attribution import fault_attribution
from eval.nl.matrix import communication_matrix
from eval.nl.report import analyse, log_report_to_wandb, write_report
from tests.wandb_records import run_records

FEATURES = ["k", "d", "l_T", "generator_params", "extractor_params", "r_math"]
CATEGORICAL = ["skeleton", "root_op", "generator_family"]
MODELS = {"small": (1.0, "qwen"), "big": (8.0, "gemma"), "reader": (4.0, "qwen")}
NL_GENERATORS = ("small", "big")
STRUCTURED = ("sexpr", "json")
EXTRACTORS = ("small", "big", "reader")
PLOTS = {"matrix.png", "accuracy.png", "shap.png"}


def _draw(*parts: object) -> int:
    """A stable number in [0, 100) for `parts`."""
    return int(hashlib.sha256(repr(parts).encode()).hexdigest(), 16) % 100


def results_table(n_expressions: int = 24) -> pd.DataFrame:
    """A deterministic results table: success falls with k, rises with the models' sizes; the small generator's
    every 7th word problem leaks (a guard failure); the serializers are nearly lossless."""
    rows = []
    for i in range(n_expressions):
        k, d = 2 + i % 4, 2 + i % 3
        expression = {
            "expr_id": f"e{i}",
            "domain": "arithmetic",
            "k": k,
            "d": d,
            "skeleton": f"s{i % 5}",
            "l_T": (i // 3) % 3,
            "root_op": "+-*/"[i % 4],
        }
        for generator in (*NL_GENERATORS, *STRUCTURED):
            nl = generator in NL_GENERATORS
            leaked = generator == "small" and i % 7 == 0
            threshold = (95 if not nl else 90 if generator == "big" else 50) - (15 * (k - 2) if nl else 0)
            for extractor in EXTRACTORS:
                skill = {"small": -10, "big": 10, "reader": 0}[extractor] if nl else 0
                correct = not leaked and _draw(i, generator, extractor) < threshold + skill
                wrong = None if _draw("parse", i, generator, extractor) < 20 else f"w{_draw(i, generator) % 2}"
                params, family = MODELS[generator] if nl else (math.nan, None)
                rows.append(
                    {
                        **expression,
                        "generator": generator,
                        "extractor": extractor,
                        "generator_kind": "nl" if nl else "structured",
                        "generator_params": params,
                        "extractor_params": MODELS[extractor][0],
                        "generator_family": family,
                        "extractor_family": MODELS[extractor][1],
                        "guard": "leak" if leaked else "pass",
                        "leak_pass": not leaked,
                        "r_math": math.nan if leaked else _draw("r", i, generator) / 100,
                        "canonical": None if leaked else f"t{i}" if correct else wrong,
                        "verdict": "guard_fail" if leaked else "correct" if correct else "wrong",
                        "correct": correct,
                    }
                )
    return pd.DataFrame(rows)


def test_write_report_writes_every_file(tmp_path: Path) -> None:
    table = results_table()
    summary = write_report(table, tmp_path, FEATURES, CATEGORICAL, seed=0, title="small run")
    assert set(summary["plots"]) == PLOTS
    for name in ("summary.json", "matrix.csv", "report.md", *PLOTS):
        assert (tmp_path / name).stat().st_size > 0, name
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    matrix = communication_matrix(table)
    assert summary["matrix"]["cells"]["reader"]["big"] == pytest.approx(matrix.cells.loc["reader", "big"])
    assert summary["structured_generators"] == list(STRUCTURED)
    csv = pd.read_csv(tmp_path / "matrix.csv", index_col="extractor")
    assert list(csv.index) == [*EXTRACTORS, "q_G", "q_G_std", "leak_pass", "guard_pass"]
    assert csv.loc["leak_pass", "small"] == pytest.approx(100 * 20 / 24)  # e0, e7, e14, e21 leak
    report = (tmp_path / "report.md").read_text()
    for heading in (
        "# small run",
        "## Communication matrix",
        "| Leak % |",
        "## Self vs cross communication",
        "## Role swaps",
        "## NL tax",
        "## Accuracy by complexity",
        "## Fault attribution",
        "Misattribution bound",
        "Panel sensitivity",
        "## Failure predictors (SHAP)",
        "## Within-depth Spearman",
        "![shap](shap.png)",
    ):
        assert heading in report, heading


def test_summary_matches_the_analyses_and_is_strict_json() -> None:
    table = results_table()
    summary = analyse(table, FEATURES, CATEGORICAL, panels={"big only": ["big"]}, seed=0)
    json.dumps(summary, allow_nan=False)
    expected = fault_attribution(table)
    assert summary["attribution"]["generator_fault_rate"] == pytest.approx(expected.generator_fault_rate)
    assert summary["attribution"]["n_errors"] == expected.n_errors
    panels = {r["panel"]: r["generator_fault_rate"] for r in summary["panel_sensitivity"]}
    assert list(panels) == ["full", "big only"] and panels["big only"] >= panels["full"]
    assert [r["extractor"] for r in summary["nl_tax"]] == list(EXTRACTORS)
    predictors = summary["predictors"]
    assert predictors["skipped_reason"] is None and predictors["n_dropped_rows"] == 12  # the leaked rows lack r_math
    assert sum(r["shap_pct"] for r in predictors["importance"]) == pytest.approx(100)
    assert summary["role_swaps"][0]["model_a"] == "small" and summary["role_swaps"][0]["model_b"] == "big"


def test_thin_table_gets_missing_data_lines(tmp_path: Path) -> None:
    table = results_table(8)
    thin = table[(table["generator"] == "big") & (table["extractor"] == "big")]
    thin = thin[["expr_id", "generator", "extractor", "generator_kind", "correct"]]
    summary = write_report(thin, tmp_path, FEATURES, CATEGORICAL)
    report = (tmp_path / "report.md").read_text()
    assert "no structured generators in this run" in report
    assert "fewer than two models act in both roles: no role swaps" in report
    assert "no column(s) ['canonical']" in report and "no column 'k'" in report
    assert "skipped: no features to fit on" in report and "features not in the table, left out" in report
    assert summary["plots"] == ["matrix.png"] and summary["attribution"] is None


def test_a_run_without_nl_generators_still_reports(tmp_path: Path) -> None:
    table = results_table(6)
    summary = write_report(table[table["generator_kind"] == "structured"], tmp_path, FEATURES, CATEGORICAL)
    assert summary["matrix"] is None and summary["plots"] == []
    assert "no NL generators in this run" in (tmp_path / "report.md").read_text()
    assert not (tmp_path / "matrix.csv").exists()


def test_the_matrix_plot_draws_cells_only_with_margins_as_bars_and_the_guard_rows() -> None:
    """The heatmap drew q^E, q^G and Leak % as heatmap cells (coloured as accuracies), left Guard % out and named
    neither the run nor n."""
    from eval.nl.plots import matrix_figure
    from eval.plotting import texts

    table = results_table()
    matrix = communication_matrix(table)
    fig = matrix_figure(matrix, "NL round trip: suite s (arithmetic, 24 expressions)")
    heading = fig.get_suptitle()
    assert "communication matrix" in heading and "suite s (arithmetic, 24 expressions)" in heading
    assert "n = 24 expressions per cell" in heading
    (image,) = [im for ax in fig.axes for im in ax.get_images()]
    assert image.get_array().shape == (len(EXTRACTORS), len(NL_GENERATORS))  # cells only: N_E x N_G
    cells, q_e, q_g, guard = fig.axes[:4]
    assert [t.get_text() for t in cells.get_yticklabels()] == list(EXTRACTORS)
    assert [t.get_text() for t in cells.get_xticklabels()] == list(NL_GENERATORS)
    assert len(q_e.patches) == len(EXTRACTORS) and len(q_g.patches) == len(NL_GENERATORS)  # the margins as bars
    assert q_e.patches[0].get_width() == pytest.approx(matrix.extraction_quality["small"])
    assert q_g.patches[1].get_height() == pytest.approx(matrix.generation_quality["big"])
    assert [t.get_text() for t in guard.get_yticklabels()] == ["Leak %", "Guard %"]
    shown = texts(fig)
    assert f"{matrix.leak_pass['small']:.1f}" in shown and f"{matrix.guard_pass['small']:.1f}" in shown
    assert f"{matrix.extraction_quality['reader']:.1f} ± {matrix.extraction_std['reader']:.1f}" in shown


def test_accuracy_and_shap_plots_name_the_run_and_n() -> None:
    from eval.nl.plots import accuracy_figure, shap_figure
    from eval.nl.predictors import failure_predictors
    from eval.plotting import texts

    table = results_table()
    accuracy = accuracy_figure(table, ["k", "d"], "run X")
    assert "run X" in accuracy.get_suptitle() and "n = 24 expressions" in accuracy.get_suptitle()
    assert "2\n(n=6)" in texts(accuracy)  # k = 2 + i % 4: 6 of the 24 expressions each
    assert all(ax.get_legend() is None for ax in accuracy.axes) and len(accuracy.legends) == 1
    result = failure_predictors(table, FEATURES, CATEGORICAL, seed=0)
    shap = shap_figure(result, "run X")
    assert "run X" in shap.get_suptitle() and f"n = {result.n_rows} round trips" in shap.get_suptitle()


@pytest.mark.slow  # W&B start-up takes several seconds
def test_log_report_to_wandb_makes_an_offline_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    frame = results_table()
    summary = write_report(frame, tmp_path, FEATURES, CATEGORICAL)
    log_report_to_wandb(summary, tmp_path, "nl-report-test", {"seed": 0}, items=frame, group="a-training-group")
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    logged = run_records(runs[0])
    assert (logged["run"]["project"], logged["run"]["group"]) == ("nl-report-test", "a-training-group")
    (history,) = logged["history"]
    assert history["matrix/mean_cell"] == pytest.approx(summary["matrix"]["mean_cell"])
    assert logged["summary"]["matrix/mean_cell"] == history["matrix/mean_cell"] and logged["config"]["seed"] == 0
    assert history["matrix_table/_type"] == history["items/_type"] == "table-file"
    assert history["items/nrows"] == len(frame) and history["matrix/_type"] == "image-file"
    assert {history[f"{Path(name).stem}/_type"] for name in summary["plots"]} == {"image-file"}
