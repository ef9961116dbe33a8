"""What predicts round-trip failure (NL paper §3.3, App. G): a gradient-boosted classifier of `correct` on structural,
model and word-problem features with mean |SHAP| attributions, and the within-depth Spearman correlation between the
linearization complexity l(T) and per-expression accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from eval.nl.matrix import as_bool, nl_rows, require_columns

FAMILY_COLUMNS = ("generator_family", "extractor_family")
FAMILY_MATCH = "family_match"
MIN_ROWS = 20  # fewer rows than this: no classifier
MIN_CLASS_ROWS = 5  # each class needs this many rows for the cross-validated AUC
MIN_DEPTH_EXPRESSIONS = 3  # a depth with fewer expressions gets no Spearman correlation
LEVEL_SEPARATOR = "="  # one-hot column names: "<feature>=<value>"


@dataclass(frozen=True)
class PredictorConfig:
    """The classifier and the SHAP sample."""

    n_estimators: int = field(default=100, metadata={"help": "Boosting stages of the GradientBoostingClassifier."})
    max_depth: int = field(default=3, metadata={"help": "Depth of each regression tree."})
    learning_rate: float = field(default=0.1, metadata={"help": "Shrinkage of each stage."})
    cv_folds: int = field(default=5, metadata={"help": "Folds of the stratified, seeded cross-validated ROC AUC."})
    max_shap_rows: int = field(
        default=20_000, metadata={"help": "SHAP values on at most this many rows (a seeded sample of them)."}
    )
    max_fit_rows: int | None = field(
        default=None, metadata={"help": "Fit on at most this many rows (a seeded sample); None: on all of them."}
    )
    max_one_hot_levels: int = field(
        default=32,
        metadata={
            "help": "A categorical feature with more levels (e.g. the skeleton) is ordinal-encoded (its sorted levels "
            "numbered) instead of one-hot."
        },
    )

    def __post_init__(self) -> None:
        for name in ("n_estimators", "max_depth", "max_shap_rows", "max_one_hot_levels"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_fit_rows is not None and self.max_fit_rows < MIN_ROWS:
            raise ValueError(f"max_fit_rows must be None or >= {MIN_ROWS}, got {self.max_fit_rows}")
        if self.cv_folds < 2:
            raise ValueError(f"cv_folds must be >= 2, got {self.cv_folds}")
        if not 0 < self.learning_rate <= 1:
            raise ValueError(f"learning_rate must be in (0, 1], got {self.learning_rate}")


@dataclass(frozen=True)
class PredictorResult:
    """Mean |SHAP| per input feature as % of the total, with its direction; `skipped_reason` set when no classifier
    could be fitted (then the tables are empty)."""

    n_rows: int  # rows used (after dropping rows with a missing numeric feature)
    n_success: int
    importance: pd.DataFrame  # feature, kind ("numeric"/"categorical"), shap_pct, direction; sorted by shap_pct desc
    levels: pd.DataFrame  # per one-hot column: feature, level, shap_pct, direction
    auc: float | None = None  # mean cross-validated ROC AUC (None: not computed)
    auc_std: float | None = None
    n_dropped_rows: int = 0
    dropped_features: tuple[str, ...] = ()  # numeric features without any value
    skipped_reason: str | None = None

    @property
    def skipped(self) -> bool:
        return self.skipped_reason is not None


def _empty_result(n_rows: int, n_success: int, reason: str, **extra: object) -> PredictorResult:
    return PredictorResult(
        n_rows=n_rows,
        n_success=n_success,
        importance=pd.DataFrame(columns=["feature", "kind", "shap_pct", "direction"]),
        levels=pd.DataFrame(columns=["feature", "level", "shap_pct", "direction"]),
        skipped_reason=reason,
        **extra,  # type: ignore[arg-type]
    )


def with_family_match(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with `family_match` (1 when generator and extractor share a known family, else 0) when both family
    columns exist; `df` unchanged otherwise."""
    if not all(c in df.columns for c in FAMILY_COLUMNS):
        return df
    generator, extractor = (df[c].map(lambda v: v if isinstance(v, str) and v else None) for c in FAMILY_COLUMNS)
    match = [int(g is not None and g == e) for g, e in zip(generator, extractor)]
    return df.assign(**{FAMILY_MATCH: match})


def _direction(values: np.ndarray, shap_values: np.ndarray) -> str:
    """The sign of the correlation between a feature's values and its SHAP values: "up" (higher values push toward
    success), "down", or "none" when it is undefined (a constant feature or constant SHAP values)."""
    if len(values) < 2 or np.std(values) == 0 or np.std(shap_values) == 0:
        return "none"
    rho = float(np.corrcoef(values, shap_values)[0, 1])
    if np.isnan(rho):
        return "none"
    return "up" if rho > 0 else "down"


def _design(
    df: pd.DataFrame, numeric: list[str], categorical: list[str], max_one_hot_levels: int
) -> tuple[pd.DataFrame, dict[str, str], dict[str, str]]:
    """The model matrix: numeric columns as floats; a categorical feature one-hot ("<feature>=<level>" columns), or
    ordinal (one column, the index of its level among the sorted levels) beyond `max_one_hot_levels` levels. Also
    column -> feature and one-hot column -> level."""
    parts = [df[numeric].astype(float)] if numeric else []
    owner = {c: c for c in numeric}
    level: dict[str, str] = {}
    for feature in categorical:
        values = df[feature].map(lambda v: "<missing>" if v is None or (isinstance(v, float) and np.isnan(v)) else v)
        values = values.astype(str)
        levels = sorted(values.unique())
        if len(levels) > max_one_hot_levels:
            codes = values.map({value: i for i, value in enumerate(levels)}).astype(float)
            parts.append(pd.DataFrame({feature: codes.to_numpy()}, index=df.index))
            owner[feature] = feature
            continue
        for value in levels:
            column = f"{feature}{LEVEL_SEPARATOR}{value}"
            parts.append(pd.DataFrame({column: (values == value).astype(float).to_numpy()}, index=df.index))
            owner[column] = feature
            level[column] = value
    return pd.concat(parts, axis=1), owner, level


def _cv_auc(model: object, x: np.ndarray, y: np.ndarray, folds: int, seed: int) -> tuple[float, float] | None:
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    if min(int(y.sum()), int(len(y) - y.sum())) < max(MIN_CLASS_ROWS, folds):
        return None
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    scores = cross_val_score(clone(model), x, y, cv=splitter, scoring="roc_auc")
    return float(scores.mean()), float(scores.std())


def failure_predictors(
    df: pd.DataFrame,
    features: Sequence[str],
    categorical: Sequence[str],
    seed: int = 0,
    config: PredictorConfig | None = None,
) -> PredictorResult:
    """Fit GradientBoostingClassifier(random_state=seed) on `correct` (1 = success) from the numeric `features`
    (bools as 0/1) and the `categorical` ones (one-hot, or ordinal beyond `config.max_one_hot_levels` levels), plus
    `family_match` when both family columns exist; mean |SHAP| (TreeExplainer, log-odds of success) per feature as %
    of the total, one-hot columns summed back to their feature; the cross-validated AUC when each class has at least
    5 rows (and a row per fold). Rows with a missing numeric value are dropped (a numeric feature without any value is
    dropped instead). Uses the rows as given: filter (e.g. to the open-weight models) before calling."""
    import shap
    from sklearn.ensemble import GradientBoostingClassifier

    config = config or PredictorConfig()
    numeric, categorical = list(dict.fromkeys(features)), list(dict.fromkeys(categorical))
    overlap = sorted(set(numeric) & set(categorical))
    if overlap:
        raise ValueError(f"features and categorical overlap: {overlap}")
    require_columns(df, ["correct", *numeric, *categorical], "failure_predictors")
    df = with_family_match(df)
    if FAMILY_MATCH in df.columns and FAMILY_MATCH not in numeric and FAMILY_MATCH not in categorical:
        numeric.append(FAMILY_MATCH)
    numeric_values = df[numeric].apply(pd.to_numeric, errors="coerce") if numeric else df[[]]
    dropped_features = tuple(c for c in numeric if numeric_values[c].isna().all())
    numeric = [c for c in numeric if c not in dropped_features]
    complete = numeric_values[numeric].notna().all(axis=1) if numeric else pd.Series(True, index=df.index)
    rows = df.loc[complete].assign(**{c: numeric_values.loc[complete, c] for c in numeric})
    y = as_bool(rows["correct"]).to_numpy(dtype=int)
    n_success = int(y.sum())
    extra = {"n_dropped_rows": int((~complete).sum()), "dropped_features": dropped_features}
    if not numeric and not categorical:
        return _empty_result(len(rows), n_success, "no features to fit on", **extra)
    if len(rows) < MIN_ROWS:
        return _empty_result(len(rows), n_success, f"only {len(rows)} rows (< {MIN_ROWS})", **extra)
    if n_success in (0, len(rows)):
        outcome = "success" if n_success else "failure"
        return _empty_result(len(rows), n_success, f"every round trip is a {outcome}: a single class", **extra)
    if config.max_fit_rows is not None and len(rows) > config.max_fit_rows:
        chosen = np.sort(np.random.default_rng(seed).choice(len(rows), size=config.max_fit_rows, replace=False))
        rows, y = rows.iloc[chosen], y[chosen]
        if y.min() == y.max():
            return _empty_result(len(rows), int(y.sum()), "the fitted sample holds a single class", **extra)
    design, owner, level = _design(rows, numeric, categorical, config.max_one_hot_levels)
    x = design.to_numpy(dtype=float)
    model = GradientBoostingClassifier(
        n_estimators=config.n_estimators,
        max_depth=config.max_depth,
        learning_rate=config.learning_rate,
        random_state=seed,
    ).fit(x, y)
    sample = np.arange(len(x))
    if len(x) > config.max_shap_rows:
        sample = np.sort(np.random.default_rng(seed).choice(len(x), size=config.max_shap_rows, replace=False))
    shap_values = np.asarray(shap.TreeExplainer(model).shap_values(x[sample]))
    if shap_values.ndim == 3:  # (rows, columns, classes) in some shap versions: keep the success class
        shap_values = shap_values[..., -1]
    mean_abs = np.abs(shap_values).mean(axis=0)
    total = float(mean_abs.sum())
    share = 100 * mean_abs / total if total > 0 else np.zeros_like(mean_abs)
    columns = list(design.columns)
    records = []
    for feature in [*numeric, *categorical]:
        mine = [i for i, c in enumerate(columns) if owner[c] == feature]
        kind = "categorical" if feature in categorical else "numeric"
        # no order among categories (direction "n/a"): their levels have one each
        direction = "n/a" if kind == "categorical" else _direction(x[sample, mine[0]], shap_values[:, mine[0]])
        share_pct = float(share[mine].sum())
        records.append({"feature": feature, "kind": kind, "shap_pct": share_pct, "direction": direction})
    level_records = [
        {
            "feature": owner[c],
            "level": level[c],
            "shap_pct": float(share[i]),
            "direction": _direction(x[sample, i], shap_values[:, i]),
        }
        for i, c in enumerate(columns)
        if c in level
    ]
    importance = pd.DataFrame(records).sort_values("shap_pct", ascending=False, kind="stable").reset_index(drop=True)
    levels = pd.DataFrame(level_records, columns=["feature", "level", "shap_pct", "direction"])
    levels = levels.sort_values("shap_pct", ascending=False, kind="stable").reset_index(drop=True)
    auc = _cv_auc(model, x, y, config.cv_folds, seed)
    return PredictorResult(
        n_rows=len(rows),
        n_success=int(y.sum()),
        importance=importance,
        levels=levels,
        auc=None if auc is None else auc[0],
        auc_std=None if auc is None else auc[1],
        **extra,  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class SpearmanResult:
    """Spearman's rho between a structural feature and per-expression accuracy within each depth."""

    feature: str
    per_depth: pd.DataFrame  # d, n_expressions, rho, p_value, skipped_reason
    mean_rho: float | None  # mean over the depths with a correlation (None: none)

    @property
    def n_depths_used(self) -> int:
        return int(self.per_depth["skipped_reason"].isna().sum())


def expression_accuracy(df: pd.DataFrame, feature: str = "l_T") -> pd.DataFrame:
    """Per expression (index expr_id): `d`, `feature` and `accuracy`, the mean correct over all its NL pairs."""
    require_columns(df, ["expr_id", "d", feature, "correct", "generator_kind"], "expression_accuracy")
    rows = nl_rows(df)
    rows = rows.assign(_correct=as_bool(rows["correct"]))
    grouped = rows.groupby("expr_id", sort=False)
    return pd.DataFrame(
        {"d": grouped["d"].first(), feature: grouped[feature].first(), "accuracy": grouped["_correct"].mean()}
    )


def within_depth_spearman(df: pd.DataFrame, feature: str = "l_T") -> SpearmanResult:
    """For each depth d: scipy.stats.spearmanr(feature, per-expression accuracy) over the expressions of depth d;
    depths with fewer than 3 expressions or a constant side are skipped, with the reason recorded."""
    from scipy.stats import spearmanr

    expressions = expression_accuracy(df, feature)
    records = []
    for depth, group in expressions.groupby("d", sort=True):
        record = {"d": depth, "n_expressions": len(group), "rho": np.nan, "p_value": np.nan, "skipped_reason": None}
        if len(group) < MIN_DEPTH_EXPRESSIONS:
            record["skipped_reason"] = f"fewer than {MIN_DEPTH_EXPRESSIONS} expressions"
        elif group[feature].nunique() < 2:
            record["skipped_reason"] = f"{feature} is constant"
        elif group["accuracy"].nunique() < 2:
            record["skipped_reason"] = "accuracy is constant"
        else:
            result = spearmanr(group[feature].astype(float), group["accuracy"].astype(float))
            record["rho"], record["p_value"] = float(result.statistic), float(result.pvalue)
        records.append(record)
    per_depth = pd.DataFrame(records, columns=["d", "n_expressions", "rho", "p_value", "skipped_reason"])
    used = per_depth["rho"].dropna()
    return SpearmanResult(feature=feature, per_depth=per_depth, mean_rho=float(used.mean()) if len(used) else None)


__all__ = [
    "FAMILY_MATCH",
    "LEVEL_SEPARATOR",
    "MIN_ROWS",
    "PredictorConfig",
    "PredictorResult",
    "SpearmanResult",
    "expression_accuracy",
    "failure_predictors",
    "with_family_match",
    "within_depth_spearman",
]
