"""The analyses of an NL round-trip run in one place: `analyse` runs the matrix, role swaps, self vs cross, NL tax,
accuracy by complexity, fault attribution, failure predictors and the within-depth Spearman correlation and returns a
JSON-serialisable summary; `write_report` also writes `summary.json`, `matrix.csv`, `report.md` and the plots;
`log_report_to_wandb` sends them to a W&B run. A section whose data is missing says so instead of failing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from eval.nl.attribution import (
    FaultAttribution,
    Misattribution,
    error_types,
    fault_attribution,
    misattribution_bound,
    panel_sensitivity,
)
from eval.nl.matrix import (
    WORD_PROBLEM,
    CommunicationMatrix,
    accuracy_by,
    communication_matrix,
    nl_rows,
    nl_tax,
    nl_tax_by,
    require_columns,
    role_swap,
    self_vs_cross,
    structured_generators,
)
from eval.nl.predictors import PredictorResult, SpearmanResult, failure_predictors, within_depth_spearman
from kt_train.stages import SUMMARY_FILE

REQUIRED = ("expr_id", "generator", "extractor", "generator_kind", "correct")
COMPLEXITY = ("k", "d")  # accuracy is broken down by these columns
TOP_ROLE_SWAPS = 10
MATRIX_FILE = "matrix.csv"
REPORT_FILE = "report.md"
HEATMAP_FILE = "matrix.png"
ACCURACY_FILE = "accuracy.png"
SHAP_FILE = "shap.png"
DEFAULT_TITLE = "NL round-trip communication study"
WANDB_JOB_TYPE = "nl-roundtrip-analysis"


@dataclass(frozen=True)
class Analysis:
    """Every analysis of one results table; a None / missing entry comes with a line in `notes`."""

    n_rows: int
    n_word_problems: int
    n_expressions: int
    structured: list[str]
    matrix: CommunicationMatrix | None = None
    role_swaps: pd.DataFrame | None = None
    self_vs_cross: dict[str, Any] | None = None
    accuracy: dict[str, pd.DataFrame] = field(default_factory=dict)  # "<role>_by_<column>" -> accuracy_by table
    nl_tax: pd.DataFrame | None = None
    nl_tax_by_k: pd.DataFrame | None = None
    attribution: FaultAttribution | None = None
    misattribution: Misattribution | None = None
    panels: pd.DataFrame | None = None
    error_types: pd.DataFrame | None = None
    predictors: PredictorResult | None = None
    spearman: SpearmanResult | None = None
    notes: dict[str, str] = field(default_factory=dict)  # section -> why it is missing or partial


def _missing(df: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    return [c for c in columns if c not in df.columns]


def run_analyses(
    df: pd.DataFrame,
    features: Sequence[str],
    categorical: Sequence[str],
    panels: Mapping[str, Sequence[str]] | None = None,
    seed: int = 0,
) -> Analysis:
    """Run every analysis that the table's columns allow (`features`/`categorical`: the predictors' inputs; names the
    table lacks are left out and noted)."""
    require_columns(df, REQUIRED, "the NL report")
    notes: dict[str, str] = {}
    nl = nl_rows(df)
    structured = structured_generators(df)
    parts: dict[str, Any] = {}
    if len(nl):
        matrix = communication_matrix(df)
        parts |= {"matrix": matrix, "self_vs_cross": self_vs_cross(matrix)}
        if len(matrix.both_roles) >= 2:
            parts["role_swaps"] = role_swap(matrix)
        else:
            notes["role_swaps"] = "fewer than two models act in both roles: no role swaps"
    else:
        notes["matrix"] = "no NL generators in this run"
    for column in COMPLEXITY:
        if column in df.columns and len(nl):
            for role in ("generator", "extractor"):
                parts.setdefault("accuracy", {})[f"{role}_by_{column}"] = accuracy_by(df, [column], role)
        else:
            notes[f"accuracy_by_{column}"] = f"no column {column!r}" if len(nl) else "no NL generators in this run"
    if not structured:
        notes["nl_tax"] = "no structured generators in this run"
    elif not len(nl):
        notes["nl_tax"] = "no NL generators in this run"
    else:
        parts["nl_tax"] = nl_tax(df)
        if "k" in df.columns:
            parts["nl_tax_by_k"] = nl_tax_by(df, "k")
    lacking = _missing(df, ["canonical"])
    if lacking or not len(nl):
        notes["attribution"] = f"no column(s) {lacking}" if lacking else "no NL generators in this run"
    else:
        parts["attribution"] = fault_attribution(df)
        parts["misattribution"] = misattribution_bound(df)
        parts["panels"] = panel_sensitivity(df, panels)
    if "error_type" in df.columns and len(nl):
        parts["error_types"] = error_types(df)
    else:
        notes["error_types"] = "no column 'error_type'" if len(nl) else "no NL generators in this run"
    numeric = [c for c in features if c in df.columns]
    kinds = [c for c in categorical if c in df.columns]
    absent = _missing(df, [*features, *categorical])
    if absent:
        notes["predictors"] = f"features not in the table, left out: {absent}"
    if len(nl):
        parts["predictors"] = failure_predictors(nl, numeric, kinds, seed=seed)
    lacking = _missing(df, ["d", "l_T"])
    if lacking or not len(nl):
        notes["spearman"] = f"no column(s) {lacking}" if lacking else "no NL generators in this run"
    else:
        parts["spearman"] = within_depth_spearman(df)
    return Analysis(
        n_rows=len(df),
        n_word_problems=len(df.drop_duplicates(list(WORD_PROBLEM))),
        n_expressions=int(df["expr_id"].nunique()),
        structured=structured,
        notes=notes,
        **parts,
    )


# --- JSON ------------------------------------------------------------------------------------------------------------


def _flat(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with a named index (or a MultiIndex) moved into columns."""
    named = frame.index.name is not None or len(frame.index.names) > 1
    return frame.reset_index() if named else frame


def jsonable(value: Any) -> Any:
    """`value` with numpy scalars as Python numbers, NaN/inf/NA as None and tables as lists of records."""
    if isinstance(value, pd.DataFrame):
        return [jsonable(r) for r in _flat(value).to_dict("records")]
    if isinstance(value, pd.Series):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if value is pd.NA or value is pd.NaT:
        return None
    return str(value)


def _matrix_summary(matrix: CommunicationMatrix) -> dict[str, Any]:
    return {
        "generators": matrix.generators,
        "extractors": matrix.extractors,
        "cells": {e: matrix.cells.loc[e].to_dict() for e in matrix.extractors},
        "n": {e: matrix.n.loc[e].to_dict() for e in matrix.extractors},
        "q_E": matrix.extraction_quality,
        "q_E_std": matrix.extraction_std,
        "q_G": matrix.generation_quality,
        "q_G_std": matrix.generation_std,
        "leak_pass": matrix.leak_pass,
        "guard_pass": matrix.guard_pass,
        "mean_cell": matrix.mean_cell,
    }


def _attribution_summary(attribution: FaultAttribution, bound: Misattribution | None) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "panel": attribution.panel,
        "n_errors": attribution.n_errors,
        "n_generator_faults": attribution.n_generator_faults,
        "n_extractor_faults": attribution.n_extractor_faults,
        "generator_fault_rate": attribution.generator_fault_rate,
        "extractor_fault_rate": attribution.extractor_fault_rate,
        "by_depth": attribution.by_depth,
        "by_generator": attribution.by_generator,
    }
    if bound is not None:
        summary["misattribution"] = {
            "success_rates": bound.success_rates,
            "mean_success_rate": bound.mean_success_rate,
            "n_faithful": bound.n_faithful,
            "n_non_decodable": bound.n_non_decodable,
            "n_guard_fail": bound.n_guard_fail,
            "p_misattribution": bound.p_misattribution,
            "expected_false_attributions": bound.expected_false_attributions,
        }
    return summary


def summarise(analysis: Analysis, title: str = DEFAULT_TITLE, plots: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON-serialisable summary of `analysis`."""
    matrix = analysis.matrix
    summary: dict[str, Any] = {
        "title": title,
        "n_rows": analysis.n_rows,
        "n_word_problems": analysis.n_word_problems,
        "n_expressions": analysis.n_expressions,
        "nl_generators": matrix.generators if matrix else [],
        "extractors": matrix.extractors if matrix else [],
        "structured_generators": analysis.structured,
        "matrix": _matrix_summary(matrix) if matrix else None,
        "role_swaps": analysis.role_swaps,
        "self_vs_cross": analysis.self_vs_cross,
        "accuracy": analysis.accuracy,
        "nl_tax": analysis.nl_tax,
        "nl_tax_by_k": analysis.nl_tax_by_k,
        "attribution": (
            _attribution_summary(analysis.attribution, analysis.misattribution) if analysis.attribution else None
        ),
        "panel_sensitivity": analysis.panels,
        "error_types": analysis.error_types,
        "predictors": None,
        "spearman": None,
        "notes": analysis.notes,
        "plots": list(plots),
    }
    if analysis.predictors is not None:
        p = analysis.predictors
        summary["predictors"] = {
            "skipped_reason": p.skipped_reason,
            "n_rows": p.n_rows,
            "n_success": p.n_success,
            "n_dropped_rows": p.n_dropped_rows,
            "dropped_features": list(p.dropped_features),
            "auc": p.auc,
            "auc_std": p.auc_std,
            "importance": p.importance,
            "levels": p.levels,
        }
    if analysis.spearman is not None:
        s = analysis.spearman
        summary["spearman"] = {"feature": s.feature, "mean_rho": s.mean_rho, "per_depth": s.per_depth}
    return jsonable(summary)


def analyse(
    df: pd.DataFrame,
    features: Sequence[str],
    categorical: Sequence[str],
    panels: Mapping[str, Sequence[str]] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Run every analysis and return the JSON-serialisable summary."""
    return summarise(run_analyses(df, features, categorical, panels, seed))


# --- markdown --------------------------------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float | np.floating) and not np.isfinite(value)):
        return "-"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        return f"{value:.{digits}f}"
    return str(value)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 1) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_fmt(v, digits) for v in row) + " |" for row in rows]
    return [*lines, ""]


def _frame_table(frame: pd.DataFrame, digits: int = 1) -> list[str]:
    flat = _flat(frame)
    return _table([str(c) for c in flat.columns], flat.itertuples(index=False, name=None), digits)


def _pm(mean: float, std: float) -> str:
    return f"{_fmt(mean)} ± {_fmt(std)}" if np.isfinite(mean) else "-"


def matrix_markdown(matrix: CommunicationMatrix) -> list[str]:
    """Table 1: extractors as rows, generators as columns, q^E (± std) on the right, q^G (± std), Leak % and guard %
    below."""
    headers = ["extractor \\ generator", *matrix.generators, "q^E"]
    rows: list[list[Any]] = [
        [e, *matrix.cells.loc[e], _pm(matrix.extraction_quality[e], matrix.extraction_std[e])]
        for e in matrix.extractors
    ]
    generation = [_pm(matrix.generation_quality[g], matrix.generation_std[g]) for g in matrix.generators]
    rows.append(["**q^G**", *generation, _fmt(matrix.mean_cell)])
    rows.append(["Leak %", *matrix.leak_pass.reindex(matrix.generators), ""])
    rows.append(["Guard %", *matrix.guard_pass.reindex(matrix.generators), ""])
    return _table(headers, rows)


def _matrix_section(analysis: Analysis) -> list[str]:
    lines = ["## Communication matrix", ""]
    if analysis.matrix is None:
        return [*lines, analysis.notes["matrix"], ""]
    lines += [
        "Round-trip accuracy (%); rows are extractors, columns generators; guard failures count as errors. "
        "q^E / q^G: row / column means (± population std over the cells); the q^G row ends with the mean cell.",
        "",
    ]
    return lines + matrix_markdown(analysis.matrix)


def _self_cross_section(analysis: Analysis) -> list[str]:
    lines = ["## Self vs cross communication", ""]
    result = analysis.self_vs_cross
    if result is None:
        return [*lines, analysis.notes["matrix"], ""]
    best, best_self = result["best_cell"], result["best_self"]
    rows = [
        ["mean self cell", result["self_mean"], result["n_self"]],
        ["mean cross cell", result["cross_mean"], result["n_cross"]],
    ]
    lines += _table(["", "accuracy %", "cells"], rows)
    if best:
        lines.append(f"- best cell: {best['extractor']} reading {best['generator']}: {_fmt(best['accuracy'])}%")
    if best_self:
        lines.append(f"- best self cell: {best_self['model']}: {_fmt(best_self['accuracy'])}%")
    if result["best_is_cross"] is not None:
        lines.append(f"- best cell pairs two different models: {_fmt(result['best_is_cross'])}")
    return [*lines, ""]


def _role_swap_section(analysis: Analysis) -> list[str]:
    lines = ["## Role swaps", ""]
    if analysis.role_swaps is None:
        return [*lines, analysis.notes.get("role_swaps", analysis.notes.get("matrix", "")), ""]
    if not len(analysis.role_swaps):
        return [*lines, "no pair of models has both cells", ""]
    top = analysis.role_swaps.head(TOP_ROLE_SWAPS)
    rows = [[r.model_a, r.model_b, r.a_to_b, r.b_to_a, r.delta] for r in top.itertuples()]
    lines += [f"Top {len(top)} of {len(analysis.role_swaps)} pairs by |delta| (pp).", ""]
    return lines + _table(["a", "b", "a gen -> b ext", "b gen -> a ext", "delta"], rows)


def _nl_tax_section(analysis: Analysis) -> list[str]:
    lines = ["## NL tax", ""]
    if analysis.nl_tax is None:
        return [*lines, analysis.notes["nl_tax"], ""]
    lines += [
        "q^E on the NL generators against each lossless serializer; tax = max(structured) - NL (pp).",
        "",
        *_frame_table(analysis.nl_tax),
    ]
    if analysis.nl_tax_by_k is not None:
        tax = analysis.nl_tax_by_k["tax"].unstack("k")
        lines += ["NL tax (pp) by operator count k:", "", *_frame_table(tax)]
    return lines


def _accuracy_section(analysis: Analysis) -> list[str]:
    lines = ["## Accuracy by complexity", ""]
    for column in COMPLEXITY:
        for role in ("generator", "extractor"):
            table = analysis.accuracy.get(f"{role}_by_{column}")
            if table is None:
                continue
            pivot = table.pivot(index=role, columns=column, values="accuracy").reindex(table[role].unique())
            lines += [f"Accuracy (%) by {column} per {role}:", "", *_frame_table(pivot)]
        if f"accuracy_by_{column}" in analysis.notes:
            lines += [f"by {column}: {analysis.notes[f'accuracy_by_{column}']}", ""]
    return lines


def _attribution_section(analysis: Analysis) -> list[str]:
    lines = ["## Fault attribution", ""]
    result = analysis.attribution
    if result is None:
        return [*lines, analysis.notes["attribution"], ""]
    lines += [
        f"Panel: all {len(result.panel)} extractors. A failed round trip is a generator fault when no extractor of "
        "the panel recovers the expression from the word problem (guard failures included), else an extractor fault.",
        "",
        *_table(
            ["errors", "generator faults", "extractor faults", "generator fault %", "extractor fault %"],
            [
                [
                    result.n_errors,
                    result.n_generator_faults,
                    result.n_extractor_faults,
                    result.generator_fault_rate,
                    result.extractor_fault_rate,
                ]
            ],
        ),
    ]
    if len(result.by_depth):
        lines += ["By depth:", "", *_frame_table(result.by_depth)]
    if len(result.by_generator):
        lines += ["By generator (mean_agreement: mean p* over its non-decodable word problems):", ""]
        lines += _frame_table(result.by_generator, digits=2)
    bound = analysis.misattribution
    if bound is not None:
        lines += [
            "Misattribution bound (Eq. 5, independent extractors): "
            f"P = prod(1 - f_i) = {bound.p_misattribution:.3g} over {len(bound.success_rates)} extractors "
            f"(mean f = {_fmt(bound.mean_success_rate, 3)}, from {bound.n_faithful} faithful word problems); "
            f"expected false attributions among {bound.n_non_decodable} non-decodable word problems that passed the "
            f"guard: {bound.expected_false_attributions:.3g}.",
            "",
        ]
        if len(bound.success_rates):
            rates = bound.success_rates.sort_values(ascending=False)
            lines += _table(["extractor", "f_i"], list(rates.items()), digits=3)
    if analysis.panels is not None and len(analysis.panels):
        lines += ["Panel sensitivity (same errors, decodability judged by each panel):", ""]
        lines += _frame_table(analysis.panels)
    return lines


def _predictor_section(analysis: Analysis) -> list[str]:
    lines = ["## Failure predictors (SHAP)", ""]
    if "predictors" in analysis.notes:
        lines += [analysis.notes["predictors"], ""]
    result = analysis.predictors
    if result is None:
        return [*lines, "no NL generators in this run", ""]
    if result.skipped:
        return [*lines, f"skipped: {result.skipped_reason}", ""]
    auc = "not computed (a class has too few rows)"
    if result.auc is not None:
        auc = f"{result.auc:.3f} ± {_fmt(result.auc_std, 3)}"
    lines += [
        f"Gradient-boosted classifier of success on {result.n_rows} round trips ({result.n_success} successes, "
        f"{result.n_dropped_rows} rows with a missing value dropped); 5-fold cross-validated ROC AUC: {auc}. "
        "Direction: up = higher values push toward success.",
        "",
    ]
    if result.dropped_features:
        lines += [f"Numeric features without any value, left out: {list(result.dropped_features)}", ""]
    rows = [[r.feature, r.kind, r.shap_pct, r.direction] for r in result.importance.itertuples()]
    lines += _table(["feature", "kind", "mean abs SHAP %", "direction"], rows)
    if len(result.levels):
        top = result.levels.head(TOP_ROLE_SWAPS)
        lines += [f"Top {len(top)} categorical levels:", ""]
        lines += _table(["feature", "level", "mean abs SHAP %", "direction"], top.itertuples(index=False, name=None))
    return lines


def _spearman_section(analysis: Analysis) -> list[str]:
    lines = ["## Within-depth Spearman", ""]
    result = analysis.spearman
    if result is None:
        return [*lines, analysis.notes["spearman"], ""]
    lines += [
        f"Spearman rho between {result.feature} and per-expression accuracy within each depth; mean over "
        f"{result.n_depths_used} depth(s): {_fmt(result.mean_rho, 3)}.",
        "",
    ]
    return lines + _frame_table(result.per_depth, digits=3)


def _error_type_section(analysis: Analysis) -> list[str]:
    lines = ["## Error types", ""]
    if analysis.error_types is None:
        return [*lines, analysis.notes.get("error_types", "not computed"), ""]
    lines += [
        "Failed NL round trips by cause (App. I): `operator_count` (the answer has another number of operators), "
        "`operators` (same count, other operators), `leaves` (same operators, other variables or constants), "
        "`structure` (same parts, arranged differently), `parse_error`, `no_output`, `guard_fail`. Share of the "
        "errors in %, overall and per generator.",
        "",
    ]
    return lines + _frame_table(analysis.error_types)


def report_markdown(analysis: Analysis, title: str = DEFAULT_TITLE, plots: Sequence[str] = ()) -> str:
    """The markdown report of `analysis` (`plots`: image files beside it)."""
    lines = [
        f"# {title}",
        "",
        f"{analysis.n_rows} round trips, {analysis.n_word_problems} word problems, {analysis.n_expressions} "
        "expressions.",
        "",
    ]
    for section in (
        _matrix_section,
        _self_cross_section,
        _role_swap_section,
        _nl_tax_section,
        _accuracy_section,
        _attribution_section,
        _error_type_section,
        _predictor_section,
        _spearman_section,
    ):
        lines += section(analysis)
    if plots:
        lines += ["## Plots", "", *(f"![{Path(p).stem}]({p})" for p in plots), ""]
    return "\n".join(lines)


# --- files and W&B ---------------------------------------------------------------------------------------------------


def matrix_csv(matrix: CommunicationMatrix) -> pd.DataFrame:
    """Table 1 as a frame: the cells with q_E / q_E_std columns and q_G / q_G_std / leak_pass / guard_pass rows."""
    table = matrix.cells.copy()
    table["q_E"] = matrix.extraction_quality
    table["q_E_std"] = matrix.extraction_std
    below = pd.DataFrame(
        [matrix.generation_quality, matrix.generation_std, matrix.leak_pass, matrix.guard_pass],
        index=["q_G", "q_G_std", "leak_pass", "guard_pass"],
    )
    return pd.concat([table, below.reindex(columns=table.columns)]).rename_axis("extractor")


def write_report(
    df: pd.DataFrame,
    output_dir: str | Path,
    features: Sequence[str],
    categorical: Sequence[str],
    panels: Mapping[str, Sequence[str]] | None = None,
    seed: int = 0,
    title: str = DEFAULT_TITLE,
) -> dict[str, Any]:
    """Write summary.json, matrix.csv (when there is a matrix), report.md and the plots under `output_dir`; return
    the summary."""
    from eval.nl.plots import accuracy_curve, heatmap, shap_bar

    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    analysis = run_analyses(df, features, categorical, panels, seed)
    plots = []
    if analysis.matrix is not None:
        matrix_csv(analysis.matrix).to_csv(output / MATRIX_FILE)
        plots.append(heatmap(analysis.matrix, output / HEATMAP_FILE, title).name)
        by = [c for c in COMPLEXITY if c in df.columns]
        if by:
            plots.append(accuracy_curve(df, by, output / ACCURACY_FILE, title).name)
    if analysis.predictors is not None and not analysis.predictors.skipped:
        plots.append(shap_bar(analysis.predictors, output / SHAP_FILE, title).name)
    summary = summarise(analysis, title, plots)
    (output / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    (output / REPORT_FILE).write_text(report_markdown(analysis, title, plots))
    return summary


def scalar_summary(summary: Mapping[str, Any]) -> dict[str, float]:
    """The summary's headline numbers (absent ones left out), keyed for W&B."""
    values: dict[str, Any] = {"n_rows": summary["n_rows"], "n_word_problems": summary["n_word_problems"]}
    if summary.get("matrix"):
        matrix = summary["matrix"]
        values["matrix/mean_cell"] = matrix["mean_cell"]
        values |= {f"q_G/{m}": v for m, v in matrix["q_G"].items()}
        values |= {f"q_E/{m}": v for m, v in matrix["q_E"].items()}
    if summary.get("self_vs_cross"):
        values["self_mean"] = summary["self_vs_cross"]["self_mean"]
        values["cross_mean"] = summary["self_vs_cross"]["cross_mean"]
    if summary.get("role_swaps"):
        values["max_role_swap_delta"] = max(abs(r["delta"]) for r in summary["role_swaps"])
    if summary.get("attribution"):
        attribution = summary["attribution"]
        values["generator_fault_rate"] = attribution["generator_fault_rate"]
        values["extractor_fault_rate"] = attribution["extractor_fault_rate"]
        if "misattribution" in attribution:
            values["p_misattribution"] = attribution["misattribution"]["p_misattribution"]
    if summary.get("nl_tax"):
        values |= {f"nl_tax/{r['extractor']}": r["tax"] for r in summary["nl_tax"]}
    if summary.get("predictors"):
        values["predictors/auc"] = summary["predictors"]["auc"]
    if summary.get("spearman"):
        values["spearman/mean_rho"] = summary["spearman"]["mean_rho"]
    return {k: float(v) for k, v in values.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def log_report_to_wandb(
    summary: Mapping[str, Any],
    output_dir: str | Path,
    project: str,
    config: Mapping[str, Any],
    items: pd.DataFrame | None = None,
    group: str | None = None,
) -> None:
    """A W&B run (offline unless logged in; files under `output_dir`): the headline numbers, the matrix as a table,
    the results as a table of items (one row per expression, generator and extractor) and the plots written by
    `write_report`."""
    import wandb

    from kt_train.wandb_runs import finish_wandb, start_wandb_run

    output = Path(output_dir)
    run = start_wandb_run(project, output, {"title": summary["title"], **config}, WANDB_JOB_TYPE, group)
    try:
        logged: dict[str, Any] = dict(scalar_summary(summary))
        matrix = summary.get("matrix")
        if matrix:
            columns = ["extractor", *matrix["generators"], "q_E"]
            data = [
                [e, *(matrix["cells"][e][g] for g in matrix["generators"]), matrix["q_E"][e]]
                for e in matrix["extractors"]
            ]
            logged["matrix_table"] = wandb.Table(columns=columns, data=data)  # "matrix" is the plot
        if items is not None:
            logged["items"] = wandb.Table(dataframe=items.astype(object).where(items.notna(), None))
        logged |= {Path(name).stem: wandb.Image(str(output / name)) for name in summary.get("plots", [])}
        run.log(logged)
        run.summary.update(scalar_summary(summary))
    finally:
        finish_wandb()


__all__ = [
    "ACCURACY_FILE",
    "DEFAULT_TITLE",
    "HEATMAP_FILE",
    "MATRIX_FILE",
    "REPORT_FILE",
    "SHAP_FILE",
    "SUMMARY_FILE",
    "Analysis",
    "analyse",
    "jsonable",
    "log_report_to_wandb",
    "matrix_csv",
    "matrix_markdown",
    "report_markdown",
    "run_analyses",
    "scalar_summary",
    "summarise",
    "write_report",
]
