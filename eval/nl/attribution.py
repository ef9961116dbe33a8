"""Consensus-based fault attribution of failed round trips (NL paper §2.4, §3.3, App. M): a word problem is faithful
(decodable) when any extractor of the panel recovers its expression; a failure on a non-decodable word problem is the
generator's fault, on a decodable one the extractor's. Guard failures never reach an extractor, so they are
non-decodable: generator faults. Rates are in percent, except the per-extractor success rates f_i (fractions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from eval.nl.matrix import WORD_PROBLEM, as_bool, nl_rows, ordered_unique, require_columns

VOTE_COLUMNS = ["correct", "canonical"]
CARRIED = ("domain", "k", "d")  # expression columns copied onto the word-problem table when present


def _canonical(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _panel(df: pd.DataFrame, panel: Sequence[str] | None) -> list[str]:
    extractors = ordered_unique(df["extractor"])
    if panel is None:
        return extractors
    panel = list(dict.fromkeys(panel))
    if not panel:
        raise ValueError("panel is empty")
    unknown = [e for e in panel if e not in extractors]
    if unknown:
        raise ValueError(f"panel has extractors that are not in the table: {unknown}")
    return panel


def _guard_failed(rows: pd.DataFrame) -> pd.Series:
    if "guard" in rows.columns:
        return rows["guard"].map(lambda g: isinstance(g, str) and g != "pass").astype(bool)
    if "verdict" in rows.columns:
        return (rows["verdict"] == "guard_fail").astype(bool)
    return pd.Series(False, index=rows.index)


VOTE_TABLE_COLUMNS = [
    "decodable",
    "n_extractors",
    "n_correct",
    "agreement",
    "modal_canonical",
    "modal_correct",
    "guard_fail",
]


def word_problem_votes(df: pd.DataFrame, panel: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per word problem (expr_id, generator) of `df` read by the `panel` extractors (default: all), in
    first-seen order: `decodable` (some extractor is correct), `n_extractors`, `n_correct`, `agreement` p* (the largest
    share of extractors giving the same canonical; a missing canonical is a group of its own; NaN for a guard failure,
    which no extractor read), `modal_canonical` (the most common canonical, ties to the smallest; missing when none
    parsed), `modal_correct`, `guard_fail`, plus `domain`/`k`/`d` when the table has them."""
    require_columns(df, [*WORD_PROBLEM, "extractor", *VOTE_COLUMNS], "word_problem_votes")
    panel = _panel(df, panel)
    key = list(WORD_PROBLEM)
    rows = df[df["extractor"].isin(panel)]
    canonical = rows["canonical"].map(_canonical)
    rows = rows.assign(
        _correct=as_bool(rows["correct"]),
        _guard_fail=_guard_failed(rows),
        _canonical=canonical,
        _unparsed=canonical.isna(),
    )
    carried = [c for c in CARRIED if c in rows.columns]
    votes = rows.groupby(key, sort=False).agg(
        **{c: (c, "first") for c in carried},
        n_extractors=("_correct", "size"),
        n_correct=("_correct", "sum"),
        guard_fail=("_guard_fail", "any"),
        _unparsed=("_unparsed", "any"),
    )
    groups = (
        rows[~rows["_unparsed"]]
        .groupby([*key, "_canonical"], sort=False)
        .agg(_count=("_correct", "size"), _any_correct=("_correct", "any"))
        .reset_index()
        .sort_values(["_count", "_canonical"], ascending=[False, True], kind="stable")
        .drop_duplicates(key)
        .set_index(key)
    )
    votes = votes.join(groups, how="left")
    largest = votes["_count"].fillna(0).where(~votes["_unparsed"], votes["_count"].fillna(0).clip(lower=1))
    agreement = (largest / votes["n_extractors"]).where(~votes["guard_fail"].astype(bool))
    votes = votes.assign(
        decodable=votes["n_correct"] > 0,
        n_correct=votes["n_correct"].astype(int),
        agreement=agreement.astype(float),
        modal_canonical=votes["_canonical"],
        modal_correct=as_bool(votes["_any_correct"]),
        guard_fail=votes["guard_fail"].astype(bool),
    )
    return votes.reset_index()[[*key, *carried, *VOTE_TABLE_COLUMNS]]


@dataclass(frozen=True)
class FaultAttribution:
    """Failed NL round trips split into generator faults (non-decodable word problem) and extractor faults."""

    panel: list[str]
    n_errors: int
    n_generator_faults: int
    n_extractor_faults: int
    generator_fault_rate: float  # % of the errors (NaN when there are none)
    extractor_fault_rate: float
    by_depth: pd.DataFrame  # index d: errors, gen_fault_pct, ext_fault_pct
    by_generator: pd.DataFrame  # index generator: errors, gen_fault_pct, ext_fault_pct, non_decodable, mean_agreement


def _split(errors: pd.DataFrame) -> dict[str, float]:
    n = len(errors)
    generator = int((~errors["decodable"]).sum())
    return {
        "errors": n,
        "gen_fault_pct": 100 * generator / n if n else float("nan"),
        "ext_fault_pct": 100 * (n - generator) / n if n else float("nan"),
    }


def fault_attribution(
    df: pd.DataFrame, panel: Sequence[str] | None = None, error_extractors: Sequence[str] | None = None
) -> FaultAttribution:
    """Attribute the failed rows (correct False) of the NL generators whose extractor is in `error_extractors`
    (default: the panel) by the decodability of their word problem under `panel` (default: every extractor)."""
    require_columns(df, [*WORD_PROBLEM, "extractor", "generator_kind", *VOTE_COLUMNS], "fault_attribution")
    rows = nl_rows(df)
    panel = _panel(df, panel)
    counted = panel if error_extractors is None else _panel(df, error_extractors)
    votes = word_problem_votes(rows, panel) if len(rows) else word_problem_votes(df.iloc[:0], None)
    failed = rows[rows["extractor"].isin(counted) & ~as_bool(rows["correct"])]
    key = list(WORD_PROBLEM)
    errors = failed[[*key, *(["d"] if "d" in failed.columns else [])]].merge(
        votes[[*key, "decodable"]], on=key, how="left", validate="many_to_one"
    )
    errors["decodable"] = as_bool(errors["decodable"])  # a word problem no panel extractor read is not decodable
    total = _split(errors)
    if "d" in errors.columns and len(errors):
        by_depth = pd.DataFrame({d: _split(group) for d, group in errors.groupby("d", sort=True)}).T
        by_depth.index.name = "d"
    else:
        by_depth = pd.DataFrame(columns=["errors", "gen_fault_pct", "ext_fault_pct"], index=pd.Index([], name="d"))
    by_generator = {}
    for generator, group in errors.groupby("generator", sort=False):
        mine = votes[(votes["generator"] == generator) & ~votes["decodable"]]
        agreement = mine["agreement"].dropna()
        by_generator[generator] = {
            **_split(group),
            "non_decodable": len(mine),
            "mean_agreement": float(agreement.mean()) if len(agreement) else float("nan"),
        }
    columns = ["errors", "gen_fault_pct", "ext_fault_pct", "non_decodable", "mean_agreement"]
    by_generator_table = pd.DataFrame.from_dict(by_generator, orient="index", columns=columns)
    by_generator_table.index.name = "generator"
    for table in (by_depth, by_generator_table):
        table["errors"] = table["errors"].astype(int)
    n_generator = int((~errors["decodable"]).sum())
    return FaultAttribution(
        panel=panel,
        n_errors=len(errors),
        n_generator_faults=n_generator,
        n_extractor_faults=len(errors) - n_generator,
        generator_fault_rate=total["gen_fault_pct"],
        extractor_fault_rate=total["ext_fault_pct"],
        by_depth=by_depth,
        by_generator=by_generator_table,
    )


@dataclass(frozen=True)
class Misattribution:
    """The chance that a faithful word problem is taken for a generator fault: every panel extractor fails on it
    (independence assumed, the paper's Eq. 5)."""

    success_rates: pd.Series  # f_i per extractor: fraction correct on confirmed-faithful (decodable) word problems
    n_faithful: int  # decodable word problems
    n_non_decodable: int  # non-decodable word problems that passed the guard (the ones that could be misattributed)
    n_guard_fail: int  # word problems rejected by the guard (generator faults by construction)
    p_misattribution: float  # prod_i (1 - f_i); NaN without any faithful word problem
    expected_false_attributions: float  # p_misattribution * n_non_decodable

    @property
    def mean_success_rate(self) -> float:
        return float(self.success_rates.mean()) if len(self.success_rates) else float("nan")


def misattribution_bound(df: pd.DataFrame, panel: Sequence[str] | None = None) -> Misattribution:
    """Eq. 5 for the NL generators' word problems and the `panel` extractors (default: all)."""
    require_columns(df, [*WORD_PROBLEM, "extractor", "generator_kind", *VOTE_COLUMNS], "misattribution_bound")
    rows = nl_rows(df)
    panel = _panel(df, panel)
    votes = word_problem_votes(rows, panel) if len(rows) else word_problem_votes(df.iloc[:0], None)
    faithful = votes.loc[votes["decodable"], list(WORD_PROBLEM)]
    on_faithful = rows[rows["extractor"].isin(panel)].merge(faithful, on=list(WORD_PROBLEM), how="inner")
    rates = pd.Series(float("nan"), index=pd.Index(panel, name="extractor"), dtype=float, name="f")
    for extractor, group in on_faithful.groupby("extractor", sort=False):
        rates[extractor] = as_bool(group["correct"]).mean()
    rates = rates.dropna()
    n_non_decodable = int((~votes["decodable"] & ~votes["guard_fail"]).sum())
    p = float(np.prod(1 - rates.to_numpy())) if len(rates) else float("nan")
    return Misattribution(
        success_rates=rates,
        n_faithful=len(faithful),
        n_non_decodable=n_non_decodable,
        n_guard_fail=int(votes["guard_fail"].sum()),
        p_misattribution=p,
        expected_false_attributions=p * n_non_decodable,
    )


def panel_sensitivity(df: pd.DataFrame, panels: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """The generator-fault rate under each named panel, over the same errors (the failed NL rows of every
    extractor): only decodability changes, so a sub-panel never reports a lower rate than a panel containing it.
    Always includes "full" (every extractor); `panels` None adds each leave-one-out panel ("without <name>")."""
    require_columns(df, ["extractor"], "panel_sensitivity")
    everyone = ordered_unique(nl_rows(df)["extractor"]) or ordered_unique(df["extractor"])
    named: dict[str, list[str]] = {"full": everyone}
    if panels is None:
        if len(everyone) > 1:
            named |= {f"without {e}": [x for x in everyone if x != e] for e in everyone}
    else:
        named |= {name: list(panel) for name, panel in panels.items()}
    records = []
    full_rate = float("nan")
    for name, panel in named.items():
        result = fault_attribution(df, panel, error_extractors=everyone)
        if name == "full":
            full_rate = result.generator_fault_rate
        records.append(
            {
                "panel": name,
                "size": len(result.panel),
                "errors": result.n_errors,
                "generator_fault_rate": result.generator_fault_rate,
                "extractor_fault_rate": result.extractor_fault_rate,
                "delta_vs_full": result.generator_fault_rate - full_rate,
            }
        )
    return pd.DataFrame(records)


def error_types(df: pd.DataFrame) -> pd.DataFrame:
    """Failed NL round trips by `error_type` (App. I: wrong operator count, other operators, other leaves, structure,
    parse errors, no output, guard failures): errors and share (%) overall, then the share per generator."""
    errors = nl_rows(df)
    errors = errors[~as_bool(errors["correct"])]
    if errors.empty:
        return pd.DataFrame(columns=["error_type", "errors", "share"])
    kinds = errors["error_type"].fillna("unknown")
    counts = kinds.value_counts()
    table = pd.DataFrame({"error_type": counts.index, "errors": counts.to_numpy()})
    table["share"] = 100.0 * table["errors"] / len(errors)
    per_generator = pd.crosstab(kinds, errors["generator"], normalize="columns") * 100
    return table.merge(per_generator, left_on="error_type", right_index=True, how="left")


__all__ = [
    "FaultAttribution",
    "Misattribution",
    "error_types",
    "fault_attribution",
    "misattribution_bound",
    "panel_sensitivity",
    "word_problem_votes",
]
