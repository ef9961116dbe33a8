"""RTCE report: aggregates and tables pinned on hand-computed rows, the files written, an offline W&B run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval.rtce.report import (
    aggregate,
    category_difficulty,
    easiest_hardest,
    log_to_wandb,
    roundtrip_markdown,
    roundtrip_summary,
    table3_markdown,
    table4_markdown,
    write_report,
)
from eval.rtce.vocabulary import PAPER_ORDER, length_bin, pass_metric
from tests.wandb_records import run_records

ALGORITHMS = PAPER_ORDER
TASKS = ("output_pred", "output_pred_inv", "input_pred", "input_pred_inv")


def _row(
    item: str,
    algorithm: str = "lzw",
    task: str = "output_pred",
    em: tuple[bool, ...] = (True, False, False, False, False),
    es: tuple[float, ...] = (1.0, 0.5, 0.5, 0.0, 0.0),
    pass5: float | None = 1.0,
    model: str = "base",
    temperature: float = 0.2,
    **extra: Any,
) -> dict[str, Any]:
    n = len(em)
    return {
        "id": f"{item}/{algorithm}/{task}",
        "item_id": item,
        "algorithm": algorithm,
        "task": task,
        "family": extra.get("family", "strings"),
        "category": extra.get("category", "keyboard"),
        "input_length": extra.get("input_length", 10),
        "model": model,
        "adapter": extra.get("adapter"),
        "temperature": temperature,
        "n": n,
        "em": list(em),
        "es": list(es),
        "pass@1": sum(em) / n,
        "pass@5": pass5 if n >= 5 else None,
        "any@5": (any(em[:5]) if n >= 5 else None),
    }


def _split(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _line(markdown: str, *lead: str) -> list[str]:
    """The cells of the table row starting with `lead`."""
    rows = [_split(line) for line in markdown.splitlines() if line.startswith("|")]
    return next(cells for cells in rows if tuple(cells[: len(lead)]) == lead)


def test_aggregate_means_over_completions_and_pass5_over_rows_that_have_it() -> None:
    rows = [
        _row("i1"),  # em 1/5, es 2.0/5, pass@1 0.2, pass@5 1.0, any@5 True
        _row("i2", em=(True, False), es=(1.0, 0.0)),  # n = 2: pass@1 0.5, no pass@5
        _row("i1", task="input_pred", em=(False,), es=(0.25,)),  # a task whose rows all lack pass@5
    ]
    out = aggregate(rows)
    assert [(r["algorithm"], r["task"]) for r in out] == [("lzw", "output_pred"), ("lzw", "input_pred")]
    op, ip = out
    assert (op["n_items"], op["samples"]) == (2, 7)
    assert op["em"] == pytest.approx(2 / 7)
    assert op["es"] == pytest.approx(3 / 7)
    assert op["pass@1"] == pytest.approx(0.35)
    assert (op["pass@5"], op["any@5"]) == (1.0, 1.0)
    assert (ip["em"], ip["es"], ip["pass@1"], ip["pass@5"], ip["any@5"]) == (0.0, 0.25, 0.0, None, None)
    assert pass_metric(rows) == "pass@1" and pass_metric(rows[:1]) == "pass@5"


def test_aggregate_orders_models_as_seen_then_temperature_algorithm_and_task() -> None:
    rows = [
        _row("i", "rle", "input_pred", model="lora", temperature=0.8),
        _row("i", "lzw", "output_pred", model="lora", temperature=0.2),
        _row("i", "ae", "input_pred"),
        _row("i", "ae", "output_pred"),
    ]
    keys = [(r["model"], r["temperature"], r["algorithm"], r["task"]) for r in aggregate(rows)]
    assert keys == [
        ("lora", 0.2, "lzw", "output_pred"),
        ("lora", 0.8, "rle", "input_pred"),
        ("base", 0.2, "ae", "output_pred"),
        ("base", 0.2, "ae", "input_pred"),
    ]


def test_roundtrip_summary_counts_both_pass_yet_roundtrip_fail() -> None:
    outcomes = [(1, 1, 1), (1, 1, 0), (1, 1, 0), (1, 0, 0), (0, 1, 0), (0, 0, 0), (0, 0, 1)]
    records = [
        {"model": "base", "temperature": 0.2, "item_id": f"i{i}", "algorithm": "rle"}
        | {"op_pass": bool(op), "ip_pass": bool(ip), "roundtrip_pass": bool(rt)}
        for i, (op, ip, rt) in enumerate(outcomes)
    ]
    records.append(records[0] | {"algorithm": "ae"})
    ae, rle = roundtrip_summary(records)  # the paper's algorithm order, whatever the input order
    assert (ae["algorithm"], ae["inputs"], ae["both_pass_roundtrip_fail"]) == ("ae", 1, 0)
    assert {k: rle[k] for k in ("inputs", "op_pass", "ip_pass", "both_pass", "roundtrip_pass")} == {
        "inputs": 7,
        "op_pass": 4,
        "ip_pass": 4,
        "both_pass": 3,
        "roundtrip_pass": 2,
    }
    assert rle["both_pass_roundtrip_fail"] == 2
    assert _line(roundtrip_markdown([rle, ae]), "base", "RLE") == ["base", "RLE", "7", "4", "4", "3", "2", "2"]
    assert "No round-trip records" in roundtrip_markdown([])


def test_table3_puts_percentages_in_their_cells_and_averages_the_shown_metrics() -> None:
    rows = [
        _row("i1", "lzw", "output_pred"),  # EM 20.0, ES 40.0, P@5 100.0
        _row("i1", "lzw", "input_pred", em=(False,) * 5, es=(0.1,) * 5, pass5=0.0),  # 0.0, 10.0, 0.0
    ]
    table = table3_markdown(aggregate(rows))
    header = _split(table.splitlines()[0])
    cells = _line(table, "base", "LZW")
    assert header[:6] == ["Model", "Alg.", "O/P Pred n", "O/P Pred EM", "O/P Pred ES", "O/P Pred P@5"]
    assert header[-1] == "Average" and len(header) == 2 + 16 + 1
    assert cells[2:6] == ["1", "20.0†", "40.0", "100.0"]  # 1 item: EM marked as too few to tell
    assert cells[6:10] == ["-", "-", "-", "-"]  # O/P Pred-I absent
    assert cells[10:14] == ["1", "0.0†", "10.0", "0.0"]
    assert cells[-1] == f"{100 * (0.2 + 0.4 + 1.0 + 0.0 + 0.1 + 0.0) / 6:.1f}"  # 28.3
    assert table.rstrip().endswith("† fewer than 30 items: too few to tell differences apart.")


def test_table3_adds_a_temperature_column_when_there_are_several() -> None:
    rows = [_row("i1"), _row("i1", temperature=0.8, em=(False,) * 5, pass5=0.0)]
    table = table3_markdown(aggregate(rows))
    assert _split(table.splitlines()[0])[:3] == ["Model", "T", "Alg."]
    assert _line(table, "base", "0.8", "LZW")[3:7] == ["1", "0.0†", "40.0", "0.0"]


def test_table4_groups_pass5_by_temperature_with_the_adapter() -> None:
    rows = [
        _row("i1", "rle", "output_pred", model="base", temperature=0.2, pass5=0.25),
        _row("i1", "rle", "output_pred", model="base", temperature=0.8, pass5=0.5),
        _row("i1", "rle", "input_pred", model="lora-rle", temperature=0.8, pass5=0.75, adapter="out/rle"),
    ]
    table = table4_markdown(aggregate(rows))
    header = _split(table.splitlines()[0])
    assert header[:5] == ["Model", "Adapter", "Alg.", "n", "T=0.2 O/P Pred"]
    assert header.index("T=0.8 I/P Pred") == 4 + 4 + 2
    base, lora = _line(table, "base", "-", "RLE"), _line(table, "lora-rle", "out/rle", "RLE")
    assert (base[3], base[4], base[8], base[4 + 4 + 2]) == ("1", "25.0†", "50.0†", "-")  # 1 item per cell
    assert (lora[3], lora[4], lora[4 + 4 + 2]) == ("1", "-", "75.0†")
    assert table.rstrip().endswith("† fewer than 30 items: too few to tell differences apart.")


def test_difficulty_by_category_and_easiest_hardest_inputs() -> None:
    rows = [
        _row("a", pass5=1.0, category="keyboard", input_length=8),
        _row("a", task="input_pred", pass5=0.5, category="keyboard", input_length=8),
        _row("b", pass5=0.0, category="yaml", family="configs", input_length=90),
        _row("c", pass5=0.0, category="yaml", family="configs", input_length=40),
        _row("c", algorithm="rle", pass5=1.0, category="yaml", family="configs", input_length=40),
    ]
    by_cell = {(r["category"], r["task"]): (r["items"], r["mean"]) for r in category_difficulty(rows)}
    assert by_cell == {("keyboard", "output_pred"): (1, 1.0), ("keyboard", "input_pred"): (1, 0.5)} | {
        ("yaml", "output_pred"): (2, 1 / 3)
    }
    lzw = easiest_hardest(rows, k=2, algorithm="lzw")
    assert [(r["item_id"], r["mean"], r["solved"]) for r in lzw["easiest"]] == [("a", 0.75, 2), ("c", 0.0, 0)]
    assert [r["item_id"] for r in lzw["hardest"]] == ["b"]  # ties with c: the longer first; the lists split 3 inputs
    assert easiest_hardest(rows, k=1)["easiest"][0]["item_id"] == "a"
    assert [[r["item_id"] for r in v] for v in easiest_hardest(rows, k=5).values()] == [["a", "c"], ["b"]]
    assert [length_bin(n) for n in (0, 16, 17, 256, 257)] == ["<=16", "<=16", "17-32", "129-256", ">256"]


def _benchmark_rows() -> list[dict[str, Any]]:
    """2 models x 4 algorithms x 4 tasks x 6 inputs in 3 categories, pass falling with length."""
    categories = [("strings", "keyboard", 8), ("strings", "dna", 40), ("logs", "apache-error", 150)]
    rows = []
    for m, model in enumerate(("base", "lora")):
        for a, algorithm in enumerate(ALGORITHMS):
            for t, task in enumerate(TASKS):
                for i in range(6):
                    family, category, length = categories[i % 3]
                    hits = max(0, 5 - (i % 3) * 2 - a - t + m)
                    em = tuple(j < hits for j in range(5))
                    row = _row(f"inp-{i}", algorithm, task, em, (0.5,) * 5, float(hits > 0), model)
                    rows.append(row | {"family": family, "category": category, "input_length": length + i})
    return rows


def _roundtrips(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ops = [r for r in rows if r["task"] == "output_pred"]
    return [
        {k: r[k] for k in ("model", "temperature", "item_id", "algorithm")}
        | {"op_pass": r["em"][0], "ip_pass": r["em"][0], "roundtrip_pass": r["em"][0] and r["item_id"] != "inp-0"}
        for r in ops
    ]


def test_write_report_writes_every_file(tmp_path: Path) -> None:
    rows = _benchmark_rows()
    summary = write_report(rows, _roundtrips(rows), tmp_path, "RTCE test", {"model": "base", "n": 5})
    assert summary["pass_metric"] == "pass@5" and len(summary["aggregated"]) == 2 * 4 * 4
    assert json.loads((tmp_path / "summary.json").read_text())["settings"] == {"model": "base", "n": 5}
    for name in summary["plots"]:
        assert (tmp_path / name).stat().st_size > 0
    assert len(summary["plots"]) == 4 + 2
    report = (tmp_path / "report.md").read_text()
    assert all(name in report for name in ("AE", "LZW", "RLE", "HUFFMAN", *summary["plots"]))
    assert "apache-error" in report and "easiest 1" in report
    assert any(r["both_pass_roundtrip_fail"] == 1 for r in summary["roundtrip"])


def test_write_report_with_one_model_one_task_and_no_pass5(tmp_path: Path) -> None:
    rows = [_row(f"i{i}", "rle", "input_pred", em=(i % 2 == 0,), es=(0.5,), input_length=5 + 40 * i) for i in range(4)]
    summary = write_report(rows, [], tmp_path, "one task", {})
    assert summary["pass_metric"] == "pass@1" and summary["algorithms"] == ["rle"]
    report = (tmp_path / "report.md").read_text()
    assert "Table 4: pass@1" in report and "No round-trip records" in report
    assert _line(report, "base", "RLE")[2:6] == ["-", "-", "-", "-"]
    assert all((tmp_path / name).stat().st_size > 0 for name in summary["plots"])


def test_log_to_wandb_makes_an_offline_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    rows = [_row("i1", "rle", task) for task in TASKS] + [_row("i2", "rle", "output_pred", em=(False,), es=(0.0,))]
    summary = write_report(rows, [], tmp_path, "wandb", {"model": "base"})
    log_to_wandb(summary, rows, tmp_path, "rtce-test", "a-training-group")
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    assert run_records(runs[0])["run"] | {"id": None, "name": None} == {
        "id": None,
        "name": None,
        "project": "rtce-test",
        "group": "a-training-group",
        "job_type": "rtce-eval",
    }
    logged = run_records(runs[0])["history"]
    assert len(logged) == 1  # one log call: scalars, tables and images together
    history = logged[0]
    records = summary["aggregated"]  # one algorithm: one record per task
    assert len(records) == len(TASKS) and records[0]["em"] != records[1]["em"]
    for record in records:
        for metric in ("em", "es", "pass@1"):
            assert history[f"base/T0.2/{record['task']}/{metric}"] == pytest.approx(record[metric])
        assert f"base/T0.2/{record['task']}/pass@5" not in history  # n = 1 in one row: pass@1 is the headline
    assert history["base/T0.2/all/em"] == pytest.approx(sum(r["em"] for r in records) / len(records))
    assert history["scores/_type"] == "table-file" and history["scores/nrows"] == len(rows)
    assert {history[f"{name.removesuffix('.png')}/_type"] for name in summary["plots"]} == {"image-file"}
    assert not any(key.endswith(".png") or ".png/" in key for key in history)


def test_plots_are_headed_by_model_benchmark_and_n_with_legends_outside_the_data() -> None:
    """The radial plots had no visible title (pushed off the figure), no n, no model or benchmark, and polygons
    drawn as plain lines of one style hid one another."""
    from eval.plotting import texts
    from eval.rtce.plots import (
        FILL_ALPHA,
        category_heatmap_figure,
        length_vs_pass_figure,
        radial_pass_figure,
        source,
    )

    rows = _benchmark_rows()
    settings = {"predictions": "/runs/preds.jsonl", "benchmark": "/data/rtce-bench", "scoring": "strict"}
    caption = source("RTCE: /runs/preds.jsonl", settings)
    assert caption == "predictions preds.jsonl · benchmark rtce-bench · strict scoring"
    assert source("RTCE: base", {}) == "RTCE: base"
    radial = radial_pass_figure(aggregate(rows), "lzw", "pass@5", caption)
    heading = radial.get_suptitle()
    assert (
        heading.startswith("RTCE LZW: pass@5 per task") and caption in heading and "n = 6 inputs per task" in heading
    )
    (axis,) = radial.axes
    assert axis.get_legend() is None and len(radial.legends) == 1  # the legend is the figure's, outside the polar axes
    assert [t.get_text() for t in radial.legends[0].get_texts()] == ["base", "lora"]
    lines = axis.get_lines()
    assert len({line.get_linestyle() for line in lines}) == len({line.get_marker() for line in lines}) == 2
    assert len([p for p in axis.patches if p.get_alpha() == FILL_ALPHA]) == 2  # translucent polygons
    length = length_vs_pass_figure(rows, "pass@5", caption)
    assert caption in length.get_suptitle() and "n = 6 inputs" in length.get_suptitle()
    assert all(a.get_legend() is None for a in length.axes) and len(length.legends) == 1
    assert "<=16\n(n=2)" in texts(length)
    categories = category_heatmap_figure(category_difficulty(rows), "pass@5", caption)
    assert "strings / keyboard (n=2)" in texts(categories) and "n = 6 inputs" in categories.get_suptitle()
