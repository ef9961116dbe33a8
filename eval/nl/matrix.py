"""The N x N communication matrix of the NL round trip (NL paper §2.3, §3.2, Table 1) and what is read off it: the
role-swap asymmetry, self- vs cross-model communication, accuracy by complexity and the NL tax against the lossless
structured serializers.

Input: the round-trip results table, one row per (expression, generator, extractor) with at least `expr_id`,
`generator`, `extractor`, `generator_kind` ("nl" or "structured") and `correct`; the guard columns `guard` and
`leak_pass` feed the Leak % / guard % rows. All accuracies are in percent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

NL_KIND = "nl"
STRUCTURED_KIND = "structured"
WORD_PROBLEM = ("expr_id", "generator")  # the key of a word problem
STD_DDOF = 0  # marginal spreads: population std over the cells of a row / column


def as_bool(values: pd.Series) -> pd.Series:
    """`values` as a plain bool Series: missing values (None, NaN, pd.NA) are False."""
    return values.map(lambda v: bool(pd.notna(v) and v)).astype(bool)


def require_columns(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Raise ValueError naming the columns of `columns` that `df` lacks."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} needs the column(s) {missing}; the table has {list(df.columns)}")


def nl_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows whose generator is a language model or an NL template (generator_kind == "nl")."""
    require_columns(df, ["generator_kind"], "nl_rows")
    return df[df["generator_kind"] == NL_KIND]


def ordered_unique(values: pd.Series) -> list[str]:
    """The distinct values in first-seen order."""
    return list(dict.fromkeys(values.tolist()))


def structured_generators(df: pd.DataFrame) -> list[str]:
    """The labels of the deterministic serializers (generator_kind == "structured"), in first-seen order."""
    if "generator_kind" not in df.columns:
        return []
    return ordered_unique(df.loc[df["generator_kind"] == STRUCTURED_KIND, "generator"])


def _percent_correct(df: pd.DataFrame) -> float:
    return float(100 * as_bool(df["correct"]).mean()) if len(df) else float("nan")


@dataclass(frozen=True)
class CommunicationMatrix:
    """Round-trip accuracy (%) per (extractor, generator) cell with its marginals and the generators' guard rates."""

    cells: pd.DataFrame  # index: extractors (rows), columns: generators; NaN where a pair has no rows
    n: pd.DataFrame  # rows per cell (same shape as `cells`)
    extraction_quality: pd.Series  # q^E_i: mean of row i's cells
    extraction_std: pd.Series
    generation_quality: pd.Series  # q^G_j: mean of column j's cells
    generation_std: pd.Series
    leak_pass: pd.Series  # per generator: % of its word problems passing the operator-adjacency check (NaN: no column)
    guard_pass: pd.Series  # per generator: % of its word problems passing every check (NaN: no column)

    @property
    def generators(self) -> list[str]:
        return list(self.cells.columns)

    @property
    def extractors(self) -> list[str]:
        return list(self.cells.index)

    @property
    def both_roles(self) -> list[str]:
        """The models that appear as generator and as extractor, in generator order."""
        extractors = set(self.extractors)
        return [g for g in self.generators if g in extractors]

    @property
    def mean_cell(self) -> float:
        """The mean of all cells with rows (NaN when none)."""
        values = self.cells.to_numpy(dtype=float)
        return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")


def _word_problems(df: pd.DataFrame) -> pd.DataFrame:
    """One row per word problem (the first row of each (expr_id, generator))."""
    return df.drop_duplicates(list(WORD_PROBLEM))


def _guard_rates(df: pd.DataFrame, generators: list[str]) -> tuple[pd.Series, pd.Series]:
    problems = _word_problems(df)
    leak = pd.Series(float("nan"), index=pd.Index(generators, name="generator"), dtype=float)
    guard = leak.copy()
    for generator, group in problems.groupby("generator", sort=False):
        if generator not in leak.index:
            continue
        if "leak_pass" in group.columns:
            leak[generator] = 100 * as_bool(group["leak_pass"]).mean()
        if "guard" in group.columns:
            guard[generator] = 100 * (group["guard"] == "pass").mean()
    return leak, guard


def communication_matrix(
    df: pd.DataFrame, generators: Sequence[str] | None = None, extractors: Sequence[str] | None = None
) -> CommunicationMatrix:
    """The matrix over `generators` x `extractors` (default: the NL generators and every extractor of their rows, in
    first-seen order); guard failures are rows with correct False, so they count as errors."""
    require_columns(df, ["expr_id", "generator", "extractor", "correct"], "communication_matrix")
    rows = nl_rows(df) if generators is None else df[df["generator"].isin(list(generators))]
    generators = ordered_unique(rows["generator"]) if generators is None else list(generators)
    if extractors is None:
        extractors = ordered_unique(rows["extractor"])
    else:
        extractors = list(extractors)
        rows = rows[rows["extractor"].isin(extractors)]
    for name, labels in (("generators", generators), ("extractors", extractors)):
        if len(set(labels)) != len(labels):
            raise ValueError(f"{name} has duplicates: {labels}")
    index = pd.Index(extractors, name="extractor")
    columns = pd.Index(generators, name="generator")
    cells = pd.DataFrame(float("nan"), index=index, columns=columns)
    counts = pd.DataFrame(0, index=index, columns=columns)
    for (extractor, generator), group in rows.groupby(["extractor", "generator"], sort=False):
        cells.loc[extractor, generator] = _percent_correct(group)
        counts.loc[extractor, generator] = len(group)
    leak, guard = _guard_rates(rows, generators)
    return CommunicationMatrix(
        cells=cells,
        n=counts,
        extraction_quality=cells.mean(axis=1, skipna=True).rename("q_E"),
        extraction_std=cells.std(axis=1, ddof=STD_DDOF, skipna=True).rename("q_E_std"),
        generation_quality=cells.mean(axis=0, skipna=True).rename("q_G"),
        generation_std=cells.std(axis=0, ddof=STD_DDOF, skipna=True).rename("q_G_std"),
        leak_pass=leak.rename("leak_pass"),
        guard_pass=guard.rename("guard_pass"),
    )


def role_swap(matrix: CommunicationMatrix) -> pd.DataFrame:
    """For each unordered pair {a, b} of models in both roles (a before b in generator order): `a_to_b` = q(a
    generates, b extracts), `b_to_a` = q(b generates, a extracts), `delta` = a_to_b - b_to_a (pp); pairs with an
    empty cell are left out; sorted by |delta| descending."""
    models = matrix.both_roles
    records = []
    for i, a in enumerate(models):
        for b in models[i + 1 :]:
            a_to_b, b_to_a = matrix.cells.loc[b, a], matrix.cells.loc[a, b]
            if np.isnan(a_to_b) or np.isnan(b_to_a):
                continue
            records.append({"model_a": a, "model_b": b, "a_to_b": a_to_b, "b_to_a": b_to_a, "delta": a_to_b - b_to_a})
    table = pd.DataFrame(records, columns=["model_a", "model_b", "a_to_b", "b_to_a", "delta"])
    order = table["delta"].abs().sort_values(ascending=False, kind="stable").index
    return table.loc[order].reset_index(drop=True)


def self_vs_cross(matrix: CommunicationMatrix) -> dict[str, Any]:
    """Self-communication (diagonal: a model reading its own word problems) against cross-model cells: their means,
    the best cell overall, the best diagonal cell and whether the best cell pairs two different models (None where
    there is nothing to compare)."""
    cells = matrix.cells
    diagonal = {m: float(cells.loc[m, m]) for m in matrix.both_roles if not np.isnan(cells.loc[m, m])}
    cross = [
        float(cells.loc[e, g]) for e in cells.index for g in cells.columns if e != g and not np.isnan(cells.loc[e, g])
    ]
    best_cell = None
    stacked = cells.stack().dropna()
    if len(stacked):
        (extractor, generator), value = max(stacked.items(), key=lambda item: item[1])  # first maximum wins
        best_cell = {"generator": generator, "extractor": extractor, "accuracy": float(value)}
    best_self = None
    if diagonal:
        model = max(diagonal, key=lambda m: diagonal[m])
        best_self = {"model": model, "accuracy": diagonal[model]}
    return {
        "self_mean": float(np.mean(list(diagonal.values()))) if diagonal else None,
        "cross_mean": float(np.mean(cross)) if cross else None,
        "n_self": len(diagonal),
        "n_cross": len(cross),
        "best_cell": best_cell,
        "best_self": best_self,
        "best_is_cross": None if best_cell is None else best_cell["generator"] != best_cell["extractor"],
        "best_minus_best_self": (
            None if best_cell is None or best_self is None else best_cell["accuracy"] - best_self["accuracy"]
        ),
    }


def accuracy_by(
    df: pd.DataFrame, by: Sequence[str], role: Literal["generator", "extractor"], nl_only: bool = True
) -> pd.DataFrame:
    """Accuracy (%) and row count per `role` model and value(s) of `by` (e.g. ["k"]), over the NL generators' rows
    unless `nl_only` is False; columns [role, *by, "accuracy", "n"], models in first-seen order, `by` ascending."""
    if role not in ("generator", "extractor"):
        raise ValueError(f"role must be 'generator' or 'extractor', got {role!r}")
    by = list(by)
    require_columns(df, [role, "correct", *by], "accuracy_by")
    rows = nl_rows(df) if nl_only else df
    rows = rows.assign(_correct=as_bool(rows["correct"]))
    grouped = rows.groupby([role, *by], sort=False)["_correct"]
    table = pd.DataFrame({"accuracy": 100 * grouped.mean(), "n": grouped.size()}).reset_index()
    rank = {m: i for i, m in enumerate(ordered_unique(rows[role]))}
    table = table.assign(_rank=table[role].map(rank)).sort_values(["_rank", *by], kind="stable")
    return table.drop(columns="_rank").reset_index(drop=True)


def _tax_table(df: pd.DataFrame, nl_generators: Sequence[str] | None) -> pd.DataFrame:
    structured = structured_generators(df)
    nl = nl_rows(df) if nl_generators is None else df[df["generator"].isin(list(nl_generators))]
    extractors = ordered_unique(pd.concat([nl["extractor"], df.loc[df["generator"].isin(structured), "extractor"]]))
    nl_matrix = communication_matrix(nl, generators=ordered_unique(nl["generator"]), extractors=extractors)
    table = pd.DataFrame({"nl": nl_matrix.extraction_quality}, index=pd.Index(extractors, name="extractor"))
    if structured:
        lossless = communication_matrix(df, generators=structured, extractors=extractors).cells
        for label in structured:
            table[label] = lossless[label]
        table["tax"] = table[structured].max(axis=1, skipna=True) - table["nl"]
    else:
        table["tax"] = float("nan")
    return table


def nl_tax(df: pd.DataFrame, nl_generators: Sequence[str] | None = None) -> pd.DataFrame:
    """Per extractor (index): `nl` = q_E over the NL generators (mean of its cells; `nl_generators` restricts them,
    e.g. to the frontier models), one column per structured generator label (its cell accuracy) and `tax` = max over
    the structured columns - nl, in pp (NaN when the run has no structured generator)."""
    require_columns(df, ["expr_id", "generator", "extractor", "generator_kind", "correct"], "nl_tax")
    for reserved in ("nl", "tax"):
        if reserved in structured_generators(df):
            raise ValueError(f"a structured generator may not be labelled {reserved!r}")
    return _tax_table(df, nl_generators)


def nl_tax_by(df: pd.DataFrame, by: str, nl_generators: Sequence[str] | None = None) -> pd.DataFrame:
    """`nl_tax` within each value of the column `by` (e.g. "k"); index (extractor, by), values of `by` ascending."""
    require_columns(df, [by], "nl_tax_by")
    parts = {value: nl_tax(group, nl_generators) for value, group in df.groupby(by, sort=True)}
    if not parts:
        return pd.DataFrame(columns=["nl", "tax"], index=pd.MultiIndex.from_tuples([], names=["extractor", by]))
    table = pd.concat(parts, names=[by, "extractor"]).swaplevel(0, 1)
    rank = {e: i for i, e in enumerate(ordered_unique(df["extractor"]))}
    order = sorted(range(len(table)), key=lambda i: (rank[table.index[i][0]], i))
    return table.iloc[order]


__all__ = [
    "NL_KIND",
    "STD_DDOF",
    "STRUCTURED_KIND",
    "WORD_PROBLEM",
    "CommunicationMatrix",
    "accuracy_by",
    "as_bool",
    "communication_matrix",
    "nl_rows",
    "nl_tax",
    "nl_tax_by",
    "ordered_unique",
    "require_columns",
    "role_swap",
    "self_vs_cross",
    "structured_generators",
]
