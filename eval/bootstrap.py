"""Paired bootstrap confidence intervals: did a model change from another on the same items (RTCE EM / ES, KT
Accuracy and CompressionRate)? Items are resampled with replacement; the same seed gives the same interval."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

MAX_DRAWS_PER_CHUNK = 1 << 20  # resampled indices held in memory at once


def paired_bootstrap_ci(
    differences: Sequence[float],
    seed: int,
    resamples: int = 10_000,
    confidence: float = 0.95,
    weights: Sequence[float] | None = None,
) -> tuple[float, float]:
    """Percentile CI of the mean of paired per-item `differences`, resampling items with replacement; with
    `weights`, of the ratio of sums `sum(differences) / sum(weights)` instead (a set-level rate such as
    CompressionRate, whose items weigh their raw bits).

    Parameters:
        differences: one value per item (the new model minus the old one).
        seed: seed of `numpy.random.default_rng`; the same seed gives the same CI.
        resamples: bootstrap samples.
        confidence: the CI's coverage, in (0, 1).
        weights: one positive value per item, or None for the plain mean.
    """
    values = np.asarray(differences, dtype=float)
    if values.size == 0:
        raise ValueError("no paired differences to bootstrap")
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError(f"need resamples >= 1 and 0 < confidence < 1, got {resamples} and {confidence}")
    scale = None if weights is None else np.asarray(weights, dtype=float)
    if scale is not None and (scale.shape != values.shape or np.any(scale <= 0)):
        raise ValueError("weights must be positive, one per difference")
    if np.all(values == values[0]) and (scale is None or np.all(scale == scale[0])):
        point = values[0] if scale is None else values[0] / scale[0]
        return float(point), float(point)
    rng = np.random.default_rng(seed)
    chunk = max(1, MAX_DRAWS_PER_CHUNK // values.size)
    statistics = []
    for start in range(0, resamples, chunk):
        drawn = rng.integers(0, values.size, size=(min(chunk, resamples - start), values.size))
        if scale is None:
            statistics.append(values[drawn].mean(axis=1))
        else:
            statistics.append(values[drawn].sum(axis=1) / scale[drawn].sum(axis=1))
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(np.concatenate(statistics), [tail, 100 - tail])
    return float(low), float(high)


def entry_seed(seed: int, *key: str) -> int:
    """A seed of its own for one comparison: `seed` mixed with CRC-32s of `key` (stable across processes, unlike
    Python's salted `hash`), so an entry's CI does not depend on which other entries exist."""
    words = [seed, *(zlib.crc32(part.encode("utf-8")) for part in key)]
    return int(np.random.SeedSequence(words).generate_state(1)[0])


__all__ = ["MAX_DRAWS_PER_CHUNK", "entry_seed", "paired_bootstrap_ci"]
