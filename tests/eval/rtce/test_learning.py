"""Adapter vs base on held-out items: the comparisons of
`learning_table` on hand-made rows, the section on top of report.md and held-out EM / ES against training step."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from eval.bootstrap import entry_seed
from eval.rtce.learning import checkpoint_points, fixed_answers, learning_markdown, learning_table
from eval.rtce.report import aggregate, table3_markdown, write_report
from eval.rtce.vocabulary import STEP_PLOT_FILE


def _row(
    item: int,
    model: str,
    em: Sequence[bool],
    es: Sequence[float] | None = None,
    temperature: float = 0.0,
    algorithm: str = "lzw",
    task: str = "output_pred",
) -> dict[str, Any]:
    es = [float(x) for x in em] if es is None else es
    item_id = f"rtce-42-{item:04d}"
    return {
        "id": f"{item_id}/{algorithm}/{task}",
        "item_id": item_id,
        "model": model,
        "adapter": None if model == "base" else f"out/{model.split('@')[0]}",
        "temperature": temperature,
        "algorithm": algorithm,
        "task": task,
        "family": "strings",
        "category": "keyboard",
        "input_length": 10 + item,
        "n": len(em),
        "em": list(em),
        "es": list(es),
        "pass@1": sum(em) / len(em),
        "pass@5": None,
        "any@5": None,
        "label_exact": True,
    }


def _pair(
    n: int, base_right: Sequence[bool], adapter_right: Sequence[bool], adapter: str = "lzw", **options: Any
) -> list[dict[str, Any]]:
    """Base and `adapter` rows on items 0..n-1, one completion each."""
    return [_row(i, "base", [base_right[i]], **options) for i in range(n)] + [
        _row(i, adapter, [adapter_right[i]], **options) for i in range(n)
    ]


def _entry(table: list[dict[str, Any]], metric: str = "em", model: str = "lzw") -> dict[str, Any]:
    (entry,) = [e for e in table if e["metric"] == metric and e["model"] == model]
    return entry


# --- learning_table --------------------------------------------------------------------------------------------------


def test_an_adapter_right_where_the_base_was_wrong_learned() -> None:
    base = [i < 10 for i in range(40)]  # right on 10 items
    adapter = [i < 30 for i in range(40)]  # the same 10 and 20 more
    entry = _entry(learning_table(_pair(40, base, adapter), seed=0))
    assert {k: entry[k] for k in ("model", "algorithm", "task", "metric", "n", "temperature")} == {
        "model": "lzw",
        "algorithm": "lzw",
        "task": "output_pred",
        "metric": "em",
        "n": 40,
        "temperature": 0.0,
    }
    assert (entry["base"], entry["adapter"], entry["diff"]) == pytest.approx((0.25, 0.75, 0.5))
    assert 0.3 < entry["ci_low"] < 0.5 < entry["ci_high"] < 0.7  # about 0.5 +- 1.96 * 0.5 / sqrt(40)
    assert entry["verdict"] == "learned" and entry["few_items"] is False


def test_equal_models_show_no_change_and_a_worse_adapter_is_worse() -> None:
    right = [i % 3 == 0 for i in range(40)]
    equal = _entry(learning_table(_pair(40, right, right), seed=0))
    assert (equal["diff"], equal["ci_low"], equal["ci_high"]) == (0.0, 0.0, 0.0)
    assert equal["verdict"] == "no detectable change"
    worse = _entry(learning_table(_pair(40, [True] * 40, right), seed=0))
    assert worse["diff"] == pytest.approx(-(1 - 14 / 40)) and worse["ci_high"] < 0
    assert worse["verdict"] == "worse"


def test_per_item_values_are_means_over_completions_for_em_and_es() -> None:
    rows = [_row(i, "base", [False, False], es=[0.2, 0.4]) for i in range(30)]
    rows += [_row(i, "lzw", [True, False], es=[0.6, 0.8]) for i in range(30)]
    table = learning_table(rows, seed=0)
    em, es = _entry(table, "em"), _entry(table, "es")
    assert (em["base"], em["adapter"], em["diff"]) == pytest.approx((0.0, 0.5, 0.5))
    assert (es["base"], es["adapter"], es["diff"]) == pytest.approx((0.3, 0.7, 0.4))
    assert (em["ci_low"], em["ci_high"]) == pytest.approx((0.5, 0.5))  # the same change on every item


def test_few_items_are_flagged() -> None:
    entry = _entry(learning_table(_pair(12, [False] * 12, [True] * 12), seed=0))
    assert entry["n"] == 12 and entry["few_items"] is True and entry["verdict"] == "learned"


def test_checkpoints_and_unpaired_prompts_are_left_out() -> None:
    rows = _pair(35, [False] * 35, [True] * 35)
    rows += [_row(i, "lzw@10", [True]) for i in range(35)]  # a checkpoint: the step curve's, not the table's
    rows += [_row(i, "lzw", [True]) for i in range(35, 40)]  # prompts the base did not answer
    rows += [_row(i, "base", [False]) for i in range(40, 42)]  # prompts the adapter did not answer
    table = learning_table(rows, seed=0)
    assert {e["model"] for e in table} == {"lzw"} and len(table) == 2
    assert _entry(table)["n"] == 35


def test_the_lowest_temperature_is_compared() -> None:
    greedy = _pair(40, [False] * 40, [i < 20 for i in range(40)], temperature=0.0)
    sampled = _pair(40, [True] * 40, [False] * 40, temperature=0.8)
    entry = _entry(learning_table(sampled + greedy, seed=0))
    assert entry["temperature"] == 0.0 and entry["diff"] == pytest.approx(0.5) and entry["verdict"] == "learned"


def test_entries_in_paper_order_with_their_own_seeds() -> None:
    rows = []
    for algorithm in ("huffman", "ae"):
        for task in ("input_pred", "output_pred"):
            options = {"algorithm": algorithm, "task": task}
            rows += [_row(i, "base", [i % 2 == 0], **options) for i in range(40)]
            rows += [_row(i, name, [i % 3 == 0], **options) for name in ("zeta", "alpha") for i in range(40)]
    table = learning_table(rows, seed=11)
    keys = [(e["algorithm"], e["task"], e["metric"], e["model"]) for e in table]
    assert keys[:5] == [
        ("ae", "output_pred", "em", "alpha"),
        ("ae", "output_pred", "em", "zeta"),
        ("ae", "output_pred", "es", "alpha"),
        ("ae", "output_pred", "es", "zeta"),
        ("ae", "input_pred", "em", "alpha"),
    ]
    assert len(keys) == 16 and keys[-1] == ("huffman", "input_pred", "es", "zeta")
    seeds = {entry_seed(11, e["model"], e["algorithm"], e["task"], e["metric"]) for e in table}
    assert len(seeds) == 16 and entry_seed(11, "lzw", "ae") == entry_seed(11, "lzw", "ae") != entry_seed(
        12, "lzw", "ae"
    )
    assert learning_table(rows, seed=11) == table and learning_table(rows, seed=12) != table


# --- markdown --------------------------------------------------------------------------------------------------------


def test_learning_markdown_reads_at_a_glance() -> None:
    learned = learning_table(_pair(40, [False] * 40, [i < 20 for i in range(40)]), seed=0)
    few = learning_table(_pair(10, [True] * 10, [True] * 10, "rle", algorithm="rle"), seed=0)
    text = learning_markdown(learned + few)
    assert text.startswith("## Did training help? (adapter vs base, held-out items)\n")
    assert "95% paired bootstrap" in text
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    assert lines[0] == "| Algorithm | Task | Metric | n | Base % | Adapter % | Change | 95% CI | Verdict |"
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[:7] == ["LZW", "O/P Pred", "EM", "40", "0.0", "50.0", "+50.0"]
    assert cells[7].startswith("[+") and cells[8] == "learned"
    assert lines[-1].endswith("| [+0.0, +0.0] | no detectable change (n < 30: too few to tell) |")
    assert "2 of 4 comparisons learned, 0 worse, 2 no detectable change." in text
    assert "no adapter" in learning_markdown([]).lower()
    other = learning_table(_pair(40, [False] * 40, [True] * 40, "lzw-v2"), seed=0)
    assert "| Algorithm | Adapter | Task |" in learning_markdown(other) and "| LZW | lzw-v2 | O/P Pred |" in (
        learning_markdown(other)
    )


def test_fixed_answers_are_counted_and_named_under_the_table() -> None:
    """AE's O/P case: the base answers one long float to every item, the adapter one short float; ES differs (the
    strings differ in likeness to the references) but neither computed anything, and the report says so."""
    rows = []
    for i in range(40):
        base, adapter = _row(i, "base", [False], [0.3], algorithm="ae"), _row(i, "ae", [False], [0.25], algorithm="ae")
        base["predictions"], adapter["predictions"] = [0.053111574075784096], [0.9202237 + i % 8 * 1e-8]
        rows += [base, adapter]
    rows += [_row(i, "base", [False], algorithm="ae", task="input_pred") for i in range(40)]  # no predictions kept
    rows += [_row(i, "ae", [True], algorithm="ae", task="input_pred") for i in range(40)]
    table = learning_table(rows, seed=0)
    es = next(e for e in table if e["metric"] == "es" and e["task"] == "output_pred")
    assert (es["base_distinct"], es["adapter_distinct"]) == (1, 8)  # 8 of 40: at the 1-in-5 limit
    assert fixed_answers(es) == ["base", "adapter"]
    unknown = next(e for e in table if e["metric"] == "es" and e["task"] == "input_pred")
    assert (unknown["base_distinct"], unknown["adapter_distinct"]) == (None, None) and fixed_answers(unknown) == []
    text = learning_markdown(table)
    assert "Fixed answers:" in text
    (note,) = [line for line in text.splitlines() if line.startswith("- ")]
    assert note.startswith("- AE O/P Pred (ae): 8 distinct answers over 40 items (base 1): the adapter gives the same")
    assert "compares fixed strings with the references" in note
    varied = [dict(r, predictions=[i % 9 if r["model"] == "ae" else 0]) for i, r in enumerate(rows[:80])]
    assert "Fixed answers" not in learning_markdown(learning_table(varied, seed=0))  # a fixed base is not noted


# --- report.md and held-out figures against training step ------------------------------------------------------------


def _run_rows() -> list[dict[str, Any]]:
    """Base, adapter `lzw` (step 20) and its checkpoint `lzw@10` on 40 LZW items, two tasks, two temperatures."""
    rows = []
    for task in ("output_pred", "input_pred"):
        for temperature in (0.0, 0.8):
            options = {"task": task, "temperature": temperature}
            rows += [_row(i, "base", [i < 8], **options) for i in range(40)]
            rows += [_row(i, "lzw@10", [i < 16], **options) for i in range(40)]
            rows += [_row(i, "lzw", [i < 28], **options) for i in range(40)]
    return rows


def test_report_starts_with_the_learning_section_and_plots_the_steps(tmp_path: Path) -> None:
    steps = {"lzw@10": 10, "lzw": 20, "rle@5": 5}  # rle: no rows, no point
    summary = write_report(_run_rows(), [], tmp_path, "RTCE: tiny", {"seed": 3, "adapter_steps": steps})
    report = (tmp_path / "report.md").read_text()
    headings = [line for line in report.splitlines() if line.startswith("#")]
    assert headings[0] == "# RTCE: tiny"
    assert headings[1].startswith("## Did training help?")
    assert "## Held-out EM / ES against training step" in headings and f"]({STEP_PLOT_FILE})" in report
    assert STEP_PLOT_FILE in summary["plots"] and (tmp_path / STEP_PLOT_FILE).stat().st_size > 0
    assert [(e["model"], e["task"], e["metric"], e["verdict"]) for e in summary["learning"]] == [
        ("lzw", "output_pred", "em", "learned"),
        ("lzw", "output_pred", "es", "learned"),
        ("lzw", "input_pred", "em", "learned"),
        ("lzw", "input_pred", "es", "learned"),
    ]
    assert summary["learning"][0]["diff"] == pytest.approx(0.5)
    points = [(p["model"], p["task"], p["step"], p["n"], p["em"]) for p in summary["by_step"]]
    assert points == [
        ("base", "output_pred", 0, 40, 0.2),
        ("lzw@10", "output_pred", 10, 40, 0.4),
        ("lzw", "output_pred", 20, 40, 0.7),
        ("base", "input_pred", 0, 40, 0.2),
        ("lzw@10", "input_pred", 10, 40, 0.4),
        ("lzw", "input_pred", 20, 40, 0.7),
    ]
    assert set(summary["by_step"][0]) == {"model", "algorithm", "task", "step", "n", "em", "es"}
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["learning"] == summary["learning"] and saved["by_step"] == summary["by_step"]


def test_the_comparisons_go_to_wandb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eval.rtce.report import log_to_wandb
    from tests.wandb_records import run_records

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    rows = _run_rows()
    summary = write_report(rows, [], tmp_path, "RTCE: tiny", {"adapter_steps": {"lzw": 20}})
    log_to_wandb(summary, rows, tmp_path, "rtce-test")
    (run,) = (tmp_path / "wandb").glob("offline-run-*")
    (history,) = run_records(run)["history"]
    assert history["learning/_type"] == "table-file" and history["learning/nrows"] == len(summary["learning"]) == 4
    assert history["heldout_vs_step/_type"] == "image-file"


def test_no_steps_no_step_plot_and_no_adapter_said_so(tmp_path: Path) -> None:
    rows = [r for r in _run_rows() if r["model"] == "base"]
    summary = write_report(rows, [], tmp_path, "RTCE: base only", {})
    report = (tmp_path / "report.md").read_text()
    assert summary["learning"] == [] and summary["by_step"] == [] and STEP_PLOT_FILE not in summary["plots"]
    assert not (tmp_path / STEP_PLOT_FILE).exists() and "against training step" not in report
    assert "No adapter in this evaluation" in report.split("\n## ")[1]


def test_checkpoint_curve_has_a_panel_per_algorithm_and_n_in_the_caption() -> None:
    from eval.plotting import texts
    from eval.rtce.plots import checkpoint_curve_figure

    rows = _run_rows() + [_row(i, m, [True], algorithm="rle") for m in ("base", "rle") for i in range(12)]
    aggregated = aggregate(rows)
    fig = checkpoint_curve_figure(aggregated, {"lzw@10": 10, "lzw": 20, "rle": 7}, "model m")
    assert [axis.get_title() for axis in fig.axes] == ["LZW (n=40)", "RLE (n=12)"]
    assert "n = 12-40 inputs per task" in fig.get_suptitle() and "T=0" in fig.get_suptitle()
    lzw = fig.axes[0]
    assert len(lzw.get_lines()) == 4  # EM and ES of two tasks
    em = next(line for line in lzw.get_lines() if line.get_label() == "O/P Pred EM")
    assert list(em.get_xdata()) == [0, 10, 20] and list(em.get_ydata()) == pytest.approx([20.0, 40.0, 70.0])
    assert "I/P Pred ES" in texts(fig)
    assert checkpoint_points(aggregated, {"rle": 7})[-1]["step"] == 7
    assert checkpoint_points(aggregated, {}) == []


def test_table3_gives_n_per_task_and_marks_few_items() -> None:
    few = [_row(i, "base", [True], algorithm="rle") for i in range(12)]
    table = table3_markdown(aggregate(_run_rows() + few))
    rle = next(line for line in table.splitlines() if line.startswith("| base | 0 | RLE"))
    lzw = next(line for line in table.splitlines() if line.startswith("| base | 0 | LZW"))
    assert "| 12 | 100.0† | 100.0 |" in rle and "| 40 | 20.0 | 20.0 |" in lzw
    assert table.rstrip().endswith("† fewer than 30 items: too few to tell differences apart.")
