"""Failure predictors on synthetic tables whose success depends on one known feature, and the within-depth Spearman
correlation on a table where accuracy falls with l(T)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from eval.nl.predictors import PredictorConfig, failure_predictors, with_family_match, within_depth_spearman

FAMILIES = ("qwen", "gemma", None)
ROOTS = ("+", "-", "*", "/")


def synthetic(n: int, seed: int, success_when_high: bool = True) -> pd.DataFrame:
    """`signal` (0-9) alone decides success; `noise`, `root_op` and the families are random."""
    rng = np.random.default_rng(seed)
    signal = rng.integers(0, 10, size=n)
    return pd.DataFrame(
        {
            "signal": signal,
            "noise": rng.normal(size=n),
            "root_op": rng.choice(ROOTS, size=n),
            "generator_family": [FAMILIES[i] for i in rng.integers(0, 3, size=n)],
            "extractor_family": [FAMILIES[i] for i in rng.integers(0, 3, size=n)],
            "correct": (signal >= 5) if success_when_high else (signal < 5),
        }
    )


@pytest.mark.parametrize(("high", "direction"), [(True, "up"), (False, "down")])
def test_the_deciding_feature_gets_the_top_share_and_its_direction(high: bool, direction: str) -> None:
    result = failure_predictors(synthetic(300, 1, high), ["signal", "noise"], ["root_op"], seed=0)
    assert not result.skipped and result.n_rows == 300
    top = result.importance.iloc[0]
    assert (top["feature"], top["direction"]) == ("signal", direction)
    assert top["shap_pct"] > 80
    assert result.importance["shap_pct"].sum() == pytest.approx(100)
    assert set(result.importance["feature"]) == {"signal", "noise", "root_op", "family_match"}
    assert result.importance.set_index("feature").loc["root_op", "direction"] == "n/a"
    assert set(result.levels["level"]) == set(ROOTS) and (result.levels["feature"] == "root_op").all()
    assert result.auc is not None and result.auc > 0.95


def test_family_match_is_one_only_for_the_same_known_family() -> None:
    table = pd.DataFrame(
        {"generator_family": ["qwen", "qwen", None, None], "extractor_family": ["qwen", "gemma", None, "qwen"]}
    )
    assert with_family_match(table)["family_match"].tolist() == [1, 0, 0, 0]
    assert "family_match" not in with_family_match(table.drop(columns="extractor_family")).columns


def test_rows_with_missing_numbers_are_dropped_and_empty_features_left_out() -> None:
    table = synthetic(100, 2).assign(params=np.nan)
    table.loc[:9, "noise"] = np.nan
    result = failure_predictors(table, ["signal", "noise", "params"], [], seed=0)
    assert result.n_rows == 90 and result.n_dropped_rows == 10 and result.dropped_features == ("params",)
    assert "params" not in set(result.importance["feature"])


def test_a_single_class_or_too_few_rows_is_skipped_not_raised() -> None:
    everyone_right = synthetic(50, 3).assign(correct=True)
    result = failure_predictors(everyone_right, ["signal"], [], seed=0)
    assert result.skipped and "single class" in result.skipped_reason and result.importance.empty
    few = failure_predictors(synthetic(12, 4), ["signal"], [], seed=0)
    assert few.skipped and "12 rows" in few.skipped_reason


def test_no_auc_when_a_class_is_rare() -> None:
    table = synthetic(60, 5).assign(correct=False)
    table.loc[:2, "correct"] = True  # 3 successes: too few for 5 folds
    result = failure_predictors(table, ["signal"], [], seed=0)
    assert not result.skipped and result.auc is None


def test_many_levels_are_ordinal_encoded_and_big_tables_sampled() -> None:
    table = synthetic(200, 8).assign(skeleton=[f"s{i % 40}" for i in range(200)])
    config = PredictorConfig(max_one_hot_levels=10, max_fit_rows=150, max_shap_rows=100)
    result = failure_predictors(table, ["signal"], ["skeleton", "root_op"], seed=0, config=config)
    assert result.n_rows == 150 and result.importance.iloc[0]["feature"] == "signal"
    assert set(result.importance["feature"]) == {"signal", "skeleton", "root_op", "family_match"}
    assert set(result.levels["feature"]) == {"root_op"}  # the skeleton is one ordinal column, without levels


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="missing_feature"):
        failure_predictors(synthetic(30, 6), ["missing_feature"], [], seed=0)
    with pytest.raises(ValueError, match="overlap"):
        failure_predictors(synthetic(30, 6), ["signal"], ["signal"], seed=0)
    with pytest.raises(ValueError, match="cv_folds"):
        PredictorConfig(cv_folds=1)


def test_the_same_seed_gives_the_same_attribution() -> None:
    table = synthetic(120, 7)
    first = failure_predictors(table, ["signal", "noise"], ["root_op"], seed=3)
    second = failure_predictors(table, ["signal", "noise"], ["root_op"], seed=3)
    pd.testing.assert_frame_equal(first.importance, second.importance)
    assert first.auc == second.auc


def spearman_table() -> pd.DataFrame:
    """Depths 2 and 3: four expressions with l_T = 0..3 and 4 - l_T of 4 extractors right (accuracy falls with l_T);
    depth 4: l_T constant; depth 5: two expressions only. A structured generator gets everything right."""
    rows = []

    def add(expr_id: str, d: int, l_t: int, n_right: int) -> None:
        for i, extractor in enumerate(("X1", "X2", "X3", "X4")):
            common = {"expr_id": expr_id, "d": d, "l_T": l_t, "extractor": extractor}
            rows.append({**common, "generator": "G", "generator_kind": "nl", "correct": i < n_right})
            rows.append({**common, "generator": "S", "generator_kind": "structured", "correct": True})

    for d in (2, 3):
        for l_t in range(4):
            add(f"d{d}l{l_t}", d, l_t, 4 - l_t)
    for i in range(3):
        add(f"d4n{i}", 4, 1, i)
    for i in range(2):
        add(f"d5n{i}", 5, i, i)
    return pd.DataFrame(rows)


def test_within_depth_spearman() -> None:
    result = within_depth_spearman(spearman_table())
    per_depth = result.per_depth.set_index("d")
    assert per_depth.loc[2, "rho"] == pytest.approx(-1.0) and per_depth.loc[3, "rho"] == pytest.approx(-1.0)
    assert per_depth.loc[4, "skipped_reason"] == "l_T is constant" and math.isnan(per_depth.loc[4, "rho"])
    assert "fewer than 3" in per_depth.loc[5, "skipped_reason"]
    assert result.mean_rho == pytest.approx(-1.0) and result.n_depths_used == 2
    assert per_depth["n_expressions"].tolist() == [4, 4, 3, 2]


def test_within_depth_spearman_records_a_constant_accuracy() -> None:
    table = spearman_table().assign(correct=True)
    result = within_depth_spearman(table)
    assert result.mean_rho is None and (result.per_depth["skipped_reason"].notna()).all()
    assert result.per_depth.set_index("d").loc[2, "skipped_reason"] == "accuracy is constant"
