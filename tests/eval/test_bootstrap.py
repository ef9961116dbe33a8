"""The paired bootstrap on tables with known answers: the mean of differences, and the ratio of sums (weights)."""

from __future__ import annotations

import numpy as np
import pytest

from eval.bootstrap import paired_bootstrap_ci


def test_bootstrap_of_constant_differences_is_that_constant() -> None:
    assert paired_bootstrap_ci([1.0] * 40, seed=0) == (1.0, 1.0)
    assert paired_bootstrap_ci([0.0] * 3, seed=5) == (0.0, 0.0)


def test_bootstrap_of_a_symmetric_table_is_symmetric_around_zero() -> None:
    """Mean 0, standard error 1/sqrt(100) = 0.1: the 95% CI is about +-1.96 * 0.1."""
    low, high = paired_bootstrap_ci([1.0, -1.0] * 50, seed=1)
    assert low < 0 < high
    assert low == pytest.approx(-0.196, abs=0.03) and high == pytest.approx(0.196, abs=0.03)
    assert abs(low + high) < 0.03


def test_bootstrap_of_a_known_mean_with_tiny_spread_is_narrow_around_it() -> None:
    differences = 0.25 + np.linspace(-0.001, 0.001, 60)
    low, high = paired_bootstrap_ci(differences.tolist(), seed=2)
    assert 0.2495 < low < 0.25 < high < 0.2505


def test_bootstrap_is_deterministic_for_a_seed_and_changes_with_it() -> None:
    differences = np.random.default_rng(0).normal(0.1, 1.0, 50).tolist()  # continuous: percentiles move with seed
    assert paired_bootstrap_ci(differences, seed=7) == paired_bootstrap_ci(differences, seed=7)
    assert paired_bootstrap_ci(differences, seed=7) != paired_bootstrap_ci(differences, seed=8)
    low, high = paired_bootstrap_ci(differences, seed=7, confidence=0.5)
    wide_low, wide_high = paired_bootstrap_ci(differences, seed=7, confidence=0.99)
    assert wide_low < low < np.mean(differences) < high < wide_high


def test_bootstrap_refuses_an_empty_table() -> None:
    with pytest.raises(ValueError, match="no paired differences"):
        paired_bootstrap_ci([], seed=0)


def test_weighted_bootstrap_is_a_ratio_of_sums() -> None:
    """Items of raw bits 100 and 900 whose bits fall by 10 and 90: every resample's ratio is 0.1."""
    assert paired_bootstrap_ci([10.0, 90.0] * 20, seed=0, weights=[100.0, 900.0] * 20) == pytest.approx((0.1, 0.1))
    low, high = paired_bootstrap_ci([-5.0, 1.0] * 50, seed=3, weights=[100.0, 100.0] * 50)
    assert low < -0.02 < high < 0  # the ratio of the sums: (-5 + 1) / 200 = -0.02
    with pytest.raises(ValueError, match="weights must be positive"):
        paired_bootstrap_ci([1.0, 2.0], seed=0, weights=[1.0, 0.0])
