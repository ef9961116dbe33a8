"""The outputs of an RTCE evaluation: aggregates, the paper's Tables 3 and 4, round-trip counts, input difficulty
(Appendices I-K), `summary.json`, `report.md`, the plots of `eval.rtce.plots` and (optionally) a W&B run.

Input: scored rows (one per model label x temperature x item x algorithm x task, with per-completion `em`/`es` lists
and `pass@1`, `pass@5`, `any@5`; the last two are None when n < 5) and round-trip records (one per model x temperature
x item x algorithm with `op_pass`, `ip_pass`, `roundtrip_pass`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.rtce import plots
from eval.rtce.learning import checkpoint_points, learning_table
from eval.rtce.vocabulary import (
    CATEGORY_PLOT_FILE,
    FEW_ITEMS,
    FEW_MARK,
    FEW_NOTE,
    LENGTH_PLOT_FILE,
    PAPER_ORDER,
    STEP_PLOT_FILE,
    TASK_ORDER,
    Row,
    algorithm_label,
    group_by,
    length_bins,
    mean_of,
    ordered,
    pass_metric,
    radial_plot_file,
    series_keys,
    several_temperatures,
    sorted_records,
    task_label,
)
from kt_train.stages import SUMMARY_FILE

TABLE3_METRICS = (("em", "EM"), ("es", "ES"), ("pass@5", "P@5"))
ROUNDTRIP_COLUMNS = (
    "model",
    "temperature",
    "algorithm",
    "inputs",
    "op_pass",
    "ip_pass",
    "both_pass",
    "roundtrip_pass",
    "both_pass_roundtrip_fail",
)
REPORT_FILE = "report.md"


# --- aggregates ------------------------------------------------------------------------------------------------------


def aggregate(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """One record per (model, temperature, algorithm, task): EM and ES over all completions, mean pass@1, pass@5 and
    any@5 over the rows that have them (None when none has)."""
    records = []
    for (model, temperature, algorithm, task), group in group_by(
        rows, ("model", "temperature", "algorithm", "task")
    ).items():
        em = [float(x) for r in group for x in r["em"]]
        es = [float(x) for r in group for x in r["es"]]
        records.append(
            {
                "model": model,
                "adapter": group[0].get("adapter"),
                "temperature": temperature,
                "algorithm": algorithm,
                "task": task,
                "n_items": len({r["item_id"] for r in group}),
                "samples": len(em),
                "em": mean_of(em),
                "es": mean_of(es),
                "pass@1": mean_of([float(r["pass@1"]) for r in group]),
                "pass@5": mean_of([float(r["pass@5"]) for r in group if r.get("pass@5") is not None]),
                "any@5": mean_of([float(r["any@5"]) for r in group if r.get("any@5") is not None]),
                "inexact_labels": sum(not r.get("label_exact", True) for r in group),
            }
            | _mode_figures(group)
        )
    return sorted_records(records)


def _mode_figures(group: Sequence[Row]) -> dict[str, float | None]:
    """EM and pass@5 of each scoring mode the rows were scored with (`eval.rtce.scoring`)."""
    figures: dict[str, float | None] = {}
    for mode in ("strict", "release"):
        if all(f"em_{mode}" in r for r in group):
            figures[f"em_{mode}"] = mean_of([float(x) for r in group for x in r[f"em_{mode}"]])
            passes = [float(r[f"pass@5_{mode}"]) for r in group if r.get(f"pass@5_{mode}") is not None]
            figures[f"pass@5_{mode}"] = mean_of(passes)
    return figures


def roundtrip_summary(records: Iterable[Row]) -> list[dict[str, Any]]:
    """Counts per (model, temperature, algorithm); `both_pass_roundtrip_fail`: O/P Pred and I/P Pred both right, yet
    the model's decoding of its own encoding is not x (the paper's headline finding)."""
    out = []
    for (model, temperature, algorithm), group in group_by(records, ("model", "temperature", "algorithm")).items():
        op = [bool(r["op_pass"]) for r in group]
        ip = [bool(r["ip_pass"]) for r in group]
        rt = [bool(r["roundtrip_pass"]) for r in group]
        out.append(
            {
                "model": model,
                "temperature": temperature,
                "algorithm": algorithm,
                "inputs": len(group),
                "op_pass": sum(op),
                "ip_pass": sum(ip),
                "both_pass": sum(o and i for o, i in zip(op, ip)),
                "roundtrip_pass": sum(rt),
                "both_pass_roundtrip_fail": sum(o and i and not r for o, i, r in zip(op, ip, rt)),
            }
        )
    return sorted_records(out)


def category_difficulty(rows: Sequence[Row], metric: str | None = None) -> list[dict[str, Any]]:
    """Mean pass per (category, task) over models, temperatures and algorithms (Appendix K)."""
    metric = metric or pass_metric(rows)
    tasks = {t: i for i, t in enumerate(ordered((r["task"] for r in rows), TASK_ORDER))}
    out = []
    for (family, category, task), group in group_by(rows, ("family", "category", "task")).items():
        values = [float(r[metric]) for r in group if r.get(metric) is not None]
        out.append(
            {
                "family": family,
                "category": category,
                "task": task,
                "items": len({r["item_id"] for r in group}),
                "rows": len(values),
                "mean": mean_of(values),
            }
        )
    return sorted(out, key=lambda r: (r["family"], r["category"], tasks[r["task"]]))


def easiest_hardest(
    rows: Sequence[Row], k: int = 5, algorithm: str | None = None, metric: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The k inputs with the highest and the lowest mean pass over tasks, models and temperatures (Appendix J);
    `solved` counts the rows with a pass above zero. Ties: shorter first among the easiest, longer among the
    hardest. With fewer than 2k inputs the two lists split them (no input in both)."""
    metric = metric or pass_metric(rows)
    chosen = [r for r in rows if algorithm is None or r["algorithm"] == algorithm]
    inputs = []
    for (item_id,), group in group_by(chosen, ("item_id",)).items():
        values = [float(r[metric]) for r in group if r.get(metric) is not None]
        if values:
            first = group[0]
            inputs.append(
                {
                    "item_id": item_id,
                    "family": first.get("family"),
                    "category": first.get("category"),
                    "input_length": first.get("input_length"),
                    "rows": len(values),
                    "solved": sum(v > 0 for v in values),
                    "mean": sum(values) / len(values),
                }
            )
    easiest = sorted(inputs, key=lambda r: (-r["mean"], r["input_length"], r["item_id"]))
    hardest = sorted(inputs, key=lambda r: (r["mean"], -r["input_length"], r["item_id"]))
    return {"easiest": easiest[: min(k, (len(inputs) + 1) // 2)], "hardest": hardest[: min(k, len(inputs) // 2)]}


# --- markdown --------------------------------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], text_columns: int) -> list[str]:
    align = ["---"] * text_columns + ["---:"] * (len(header) - text_columns)
    return [f"| {' | '.join(cells)} |" for cells in (header, align, *rows)]


def _tasks(records: Iterable[Row]) -> list[str]:
    """The four paper tasks (always, so the table keeps its shape) and any other task present."""
    return ordered([*TASK_ORDER, *(r["task"] for r in records)], TASK_ORDER)


def few_items(record: Row) -> bool:
    """An aggregate over fewer than FEW_ITEMS items."""
    return int(record.get("n_items") or 0) < FEW_ITEMS


def _n_cell(record: Row | None) -> str:
    return "-" if record is None else str(record["n_items"])


def _marked(value: str, record: Row | None) -> str:
    """`value`, with FEW_MARK when `record` counts too few items."""
    return value + FEW_MARK if record is not None and few_items(record) else value


def _footnote(records: Iterable[Row]) -> str:
    return f"\n{FEW_NOTE}" if any(few_items(r) for r in records) else ""


def _task_cells(record: Row | None) -> list[str]:
    """n, then EM / ES / P@5 in %, EM marked when n is small."""
    values = [_pct(None if record is None else record.get(key)) for key, _ in TABLE3_METRICS]
    return [_n_cell(record), _marked(values[0], record), *values[1:]]


def table3_markdown(aggregated: Sequence[Row]) -> str:
    """The paper's Table 3: a row per model (and temperature) x algorithm, n items and EM / ES / P@5 in % per task,
    and Average, the mean of the metrics shown in the row; a footnote marks aggregates of too few items."""
    index = {(r["model"], r["temperature"], r["algorithm"], r["task"]): r for r in aggregated}
    tasks, temps = _tasks(aggregated), several_temperatures(aggregated)
    header = [
        "Model",
        *(["T"] if temps else []),
        "Alg.",
        *(f"{task_label(t)} {name}" for t in tasks for name in ("n", *(name for _, name in TABLE3_METRICS))),
        "Average",
    ]
    body = []
    for model, temperature in series_keys(aggregated):
        mine = [r for r in aggregated if r["model"] == model and r["temperature"] == temperature]
        for algorithm in ordered((r["algorithm"] for r in mine), PAPER_ORDER):
            records = [index.get((model, temperature, algorithm, t)) for t in tasks]
            values = [r.get(key) for r in records if r is not None for key, _ in TABLE3_METRICS]
            average = mean_of([v for v in values if v is not None])
            lead = [model, *([f"{temperature:g}"] if temps else []), algorithm_label(algorithm)]
            body.append([*lead, *(cell for r in records for cell in _task_cells(r)), _pct(average)])
    return "\n".join(_table(header, body, 3 if temps else 2)) + "\n" + _footnote(aggregated)


def table4_markdown(aggregated: Sequence[Row], metric: str = "pass@5") -> str:
    """The paper's Table 4: `metric` per task in %, a row per model (adapter) x algorithm with its n items per cell,
    a column group per temperature; a footnote marks cells of too few items."""
    index = {(r["model"], r["temperature"], r["algorithm"], r["task"]): r for r in aggregated}
    tasks, temps = _tasks(aggregated), sorted({r["temperature"] for r in aggregated})
    adapters: dict[str, str | None] = {}
    for r in aggregated:
        adapters[r["model"]] = adapters.get(r["model"]) or r.get("adapter")
    with_adapter = any(adapters.values())
    header = [
        "Model",
        *(["Adapter"] if with_adapter else []),
        "Alg.",
        "n",
        *(f"T={t:g} {task_label(task)}" for t in temps for task in tasks),
    ]
    body = []
    for model in dict.fromkeys(r["model"] for r in aggregated):
        algorithms = ordered((r["algorithm"] for r in aggregated if r["model"] == model), PAPER_ORDER)
        for algorithm in algorithms:
            records = [index.get((model, t, algorithm, task)) for t in temps for task in tasks]
            cells = [_marked(_pct(None if r is None else r.get(metric)), r) for r in records]
            lead = [model, *([adapters[model] or "-"] if with_adapter else []), algorithm_label(algorithm)]
            body.append([*lead, _n_range(r for r in records if r is not None), *cells])
    return "\n".join(_table(header, body, 3 if with_adapter else 2)) + "\n" + _footnote(aggregated)


def _n_range(records: Iterable[Row]) -> str:
    """The items per cell of a row: '40', or '20-40' when the cells differ."""
    counts = sorted({int(r["n_items"]) for r in records})
    return "-" if not counts else str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def scoring_markdown(aggregated: Sequence[Row]) -> str:
    """EM and P@5 (%) under both scoring modes, and the prompts whose label the shown code does not return."""
    if not aggregated or not all("em_release" in r for r in aggregated):
        return "Only one scoring mode in these rows.\n"
    temps = several_temperatures(aggregated)
    header = ["Model", *(["T"] if temps else []), "Alg.", "Task", "prompts", "inexact labels"]
    header += ["EM strict", "EM release", "P@5 strict", "P@5 release"]
    body = []
    for r in aggregated:
        lead = [r["model"], *([f"{r['temperature']:g}"] if temps else []), algorithm_label(r["algorithm"])]
        counts = [task_label(r["task"]), str(r["n_items"]), str(r["inexact_labels"])]
        figures = [r["em_strict"], r["em_release"], r["pass@5_strict"], r["pass@5_release"]]
        body.append([*lead, *counts, *map(_pct, figures)])
    return "\n".join(_table(header, body, 4 if temps else 3)) + "\n"


def roundtrip_markdown(summary: Sequence[Row]) -> str:
    """Round-trip counts per model (and temperature) x algorithm."""
    if not summary:
        return "No round-trip records.\n"
    temps = several_temperatures(summary)
    header = [
        "Model",
        *(["T"] if temps else []),
        "Alg.",
        "inputs",
        "O/P Pred",
        "I/P Pred",
        "both",
        "round trip",
        "both, round trip fails",
    ]
    body = [
        [
            r["model"],
            *([f"{r['temperature']:g}"] if temps else []),
            algorithm_label(r["algorithm"]),
            *(str(r[k]) for k in ("inputs", "op_pass", "ip_pass", "both_pass", "roundtrip_pass")),
            str(r["both_pass_roundtrip_fail"]),
        ]
        for r in summary
    ]
    return "\n".join(_table(header, body, 3 if temps else 2)) + "\n"


def category_markdown(difficulty: Sequence[Row]) -> str:
    """Mean pass in % per category (rows) and task (columns)."""
    index = {(r["category"], r["task"]): r["mean"] for r in difficulty}
    tasks = ordered((r["task"] for r in difficulty), TASK_ORDER)
    categories = dict.fromkeys((r["family"], r["category"]) for r in difficulty)
    body = [
        [category, str(family), *(_pct(index.get((category, t))) for t in tasks)] for family, category in categories
    ]
    return "\n".join(_table(["Category", "Family", *map(task_label, tasks)], body, 2)) + "\n"


def inputs_markdown(inputs: Mapping[str, Sequence[Row]]) -> str:
    """The easiest and hardest inputs (from `easiest_hardest`) as one table."""
    header = ["", "Input", "Category", "Length", "rows", "solved", "mean pass"]
    body = [
        [
            f"{kind} {rank}",
            r["item_id"],
            str(r["category"]),
            *(str(r[key]) for key in ("input_length", "rows", "solved")),
            _pct(r["mean"]),
        ]
        for kind in ("easiest", "hardest")
        for rank, r in enumerate(inputs[kind], start=1)
    ]
    return "\n".join(_table(header, body, 3)) + "\n"


def report_markdown(summary: Mapping[str, Any]) -> str:
    """report.md: whether training helped, settings, held-out figures against training step (when given), Tables 3
    and 4, round trips, plots, category difficulty, easiest and hardest inputs."""
    from eval.rtce.learning import learning_markdown

    metric, aggregated = summary["pass_metric"], summary["aggregated"]
    settings = "".join(f"- {key}: `{value}`\n" for key, value in summary["settings"].items())
    parts = [
        f"# {summary['title']}\n",
        learning_markdown(summary.get("learning", [])),
        *([settings] if settings else []),
        *([_step_markdown(summary["by_step"])] if STEP_PLOT_FILE in summary.get("plots", []) else []),
        "## Table 3: EM, ES and Pass@5 per task (%)\n\nAverage: the mean of the metrics shown in its row; "
        "`-`: no data (P@5 needs n >= 5).\n\n" + table3_markdown(aggregated),
        f"## Table 4: {metric} per task and temperature (%)\n\n" + table4_markdown(aggregated, metric),
        f"## Scoring modes (headline: {summary['settings'].get('scoring', 'strict')})\n\nstrict: the paper's text "
        "(JSON answers, case-folded strings); release: the public release's scorer and its leniencies. Inexact "
        "labels: prompts whose label the shown code does not return (float AE decoding), scored against the "
        "release's label.\n\n" + scoring_markdown(aggregated),
        "## Round trips (inputs counted)\n\nO/P Pred on x and I/P Pred on the true z, each scored on its own "
        "(first completion); round trip: the model, given its own encoding of x, answers x. `both, round trip "
        "fails`: both directions right, round trip wrong.\n\n" + roundtrip_markdown(summary["roundtrip"]),
        f"## {metric} per task, one polygon per model\n\n"
        + "".join(f"![{algorithm_label(a)}]({radial_plot_file(a)})\n" for a in summary["algorithms"]),
        f"## Input length vs {metric}\n\n![length]({LENGTH_PLOT_FILE})\n",
        f"## Mean {metric} per input category and task (%)\n\n![categories]({CATEGORY_PLOT_FILE})\n\n"
        + category_markdown(summary["category_difficulty"]),
        f"## Easiest and hardest inputs (mean {metric} over tasks and models, %)\n\n"
        + "\n".join(f"### {algorithm_label(a)}\n\n{inputs_markdown(summary['inputs'][a])}" for a in summary["inputs"]),
    ]
    return "\n".join(parts)


def _step_markdown(points: Sequence[Row]) -> str:
    models = ", ".join(f"{m} (step {s})" for m, s in dict.fromkeys((p["model"], p["step"]) for p in points))
    return (
        "## Held-out EM / ES against training step\n\nThe base model at step 0, each adapter and checkpoint at the "
        f"step it was saved (lowest temperature): {models or 'no adapter of an algorithm has a step'}.\n\n"
        f"![held-out EM / ES by step]({STEP_PLOT_FILE})\n"
    )


# --- files and W&B ---------------------------------------------------------------------------------------------------


def write_report(
    rows: Sequence[Row],
    roundtrip_records: Sequence[Row],
    output_dir: str | Path,
    title: str,
    settings: Mapping[str, Any],
    k: int = 5,
) -> dict[str, Any]:
    """Write summary.json, report.md and the PNGs into `output_dir`; return the summary."""
    if not rows:
        raise ValueError("no scored rows to report")
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    metric, aggregated = pass_metric(rows), aggregate(rows)
    algorithms = ordered((r["algorithm"] for r in rows), PAPER_ORDER)
    difficulty = category_difficulty(rows, metric)
    source = plots.source(title, settings)
    for algorithm in algorithms:
        plots.radial_pass_plot(aggregated, algorithm, output / radial_plot_file(algorithm), metric, source)
    plots.length_vs_pass_plot(rows, output / LENGTH_PLOT_FILE, metric, source)
    plots.category_heatmap_plot(difficulty, output / CATEGORY_PLOT_FILE, metric, source)
    steps = {label: int(step) for label, step in (settings.get("adapter_steps") or {}).items()}
    step_plots = [STEP_PLOT_FILE] if steps else []
    if steps:
        plots.checkpoint_curve_plot(aggregated, steps, source, output / STEP_PLOT_FILE)
    summary = {
        "title": title,
        "settings": dict(settings),
        "learning": learning_table(rows, int(settings.get("seed") or 0)),
        "by_step": checkpoint_points(aggregated, steps) if steps else [],
        "pass_metric": metric,
        "algorithms": algorithms,
        "aggregated": aggregated,
        "roundtrip": roundtrip_summary(roundtrip_records),
        "by_length": length_bins(rows, metric),
        "category_difficulty": difficulty,
        "inputs": {a: easiest_hardest(rows, k, a, metric) for a in algorithms},
        "plots": [*map(radial_plot_file, algorithms), LENGTH_PLOT_FILE, CATEGORY_PLOT_FILE, *step_plots],
    }
    (output / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    (output / REPORT_FILE).write_text(report_markdown(summary), encoding="utf-8")
    return summary


def headline_scalars(summary: Mapping[str, Any]) -> dict[str, float]:
    """The run's numbers for W&B's runs table: per model and temperature, EM / ES / pass@1 (and pass@5 when every
    row has it) over all algorithms and per task (`{model}/T{temperature}/{task}/{metric}`), and the share of
    inputs whose round trip failed although both tasks passed (`.../roundtrip/both_pass_roundtrip_fail`)."""
    metrics = ["em", "es", "pass@1", *(["pass@5"] if summary["pass_metric"] == "pass@5" else [])]
    scalars: dict[str, float] = {}
    for (model, temperature), group in group_by(summary["aggregated"], ("model", "temperature")).items():
        prefix = f"{model}/T{temperature}"
        per_task = [(key[0], records) for key, records in group_by(group, ("task",)).items()]
        for name, records in [("all", group), *per_task]:
            for metric in metrics:
                value = mean_of([r[metric] for r in records if r.get(metric) is not None])
                if value is not None:
                    scalars[f"{prefix}/{name}/{metric}"] = value
    for (model, temperature), group in group_by(summary["roundtrip"], ("model", "temperature")).items():
        inputs = sum(r["inputs"] for r in group)
        if inputs:
            failed = sum(r["both_pass_roundtrip_fail"] for r in group) / inputs
            scalars[f"{model}/T{temperature}/roundtrip/both_pass_roundtrip_fail"] = failed
    return scalars


def _wandb_table(records: Sequence[Row], columns: Collection[str]) -> Any:
    import wandb

    return wandb.Table(columns=list(columns), data=[[r.get(c) for c in columns] for r in records])


def log_to_wandb(
    summary: Mapping[str, Any], rows: Sequence[Row], output_dir: str | Path, project: str, group: str | None = None
) -> None:
    """A W&B run, in `group` when given (offline unless logged in; files under `output_dir`): tables of the
    aggregates, the round trips, the scored rows and the adapter-vs-base comparisons (when any), and the plots."""
    import wandb

    from eval.rtce.learning import LEARNING_COLUMNS
    from kt_train.wandb_runs import finish_wandb, start_wandb_run

    output = Path(output_dir)
    run = start_wandb_run(project, output, {"title": summary["title"], **summary["settings"]}, "rtce-eval", group)
    try:
        scores = [
            {**r, "em": mean_of([float(x) for x in r["em"]]), "es": mean_of([float(x) for x in r["es"]])} for r in rows
        ]
        score_columns = ["id", "model", "temperature", "algorithm", "task", "family", "category", "input_length", "n"]
        run.log(
            {
                "aggregated": _wandb_table(summary["aggregated"], list(summary["aggregated"][0])),
                "roundtrip": _wandb_table(summary["roundtrip"], ROUNDTRIP_COLUMNS),
                "scores": _wandb_table(scores, [*score_columns, "em", "es", "pass@1", "pass@5", "any@5"]),
            }
            | ({"learning": _wandb_table(summary["learning"], LEARNING_COLUMNS)} if summary.get("learning") else {})
            | {name.removesuffix(".png"): wandb.Image(str(output / name)) for name in summary["plots"]}
            | headline_scalars(summary)
        )
    finally:
        finish_wandb()


__all__ = [
    "REPORT_FILE",
    "ROUNDTRIP_COLUMNS",
    "SUMMARY_FILE",
    "aggregate",
    "category_difficulty",
    "category_markdown",
    "easiest_hardest",
    "few_items",
    "headline_scalars",
    "inputs_markdown",
    "log_to_wandb",
    "report_markdown",
    "roundtrip_markdown",
    "roundtrip_summary",
    "table3_markdown",
    "table4_markdown",
    "write_report",
]
