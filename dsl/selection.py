"""Deduplicate a candidate stream: each sequence once, with its shortest program by bits (ties by program text).

The result is defined on the candidate stream alone, so it does not depend on block size or worker count: scan
candidates in order (skipping excluded sequences) up to the first candidate at which the target is met (N distinct
sequences, or at least B bytes of distinct sequences); rows are the distinct sequences in order of first appearance,
each carried by its best candidate within that prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Target:
    """Stop after `pairs` distinct sequences, or once distinct sequences hold `bytes` values."""

    pairs: int | None = None
    bytes: int | None = None

    def __post_init__(self) -> None:
        if (self.pairs is None) == (self.bytes is None):
            raise ValueError("set exactly one of pairs / bytes")
        if (self.pairs or self.bytes or 0) <= 0:
            raise ValueError("the target must be positive")


@dataclass(frozen=True)
class Selection:
    rows: np.ndarray | None  # candidate index per output row, in order of first appearance; None if short
    distinct: int  # distinct non-excluded sequences among the candidates scanned
    distinct_bytes: int
    candidates: int  # candidates scanned (the prefix, or all when short)
    excluded: int  # scanned candidates dropped because their sequence is excluded


@dataclass(frozen=True)
class _Groups:
    """Candidates sorted by (sequence, bits, index), cut into one group per distinct sequence."""

    members: np.ndarray  # candidate indices in sorted order
    starts: np.ndarray  # start of each group in `members`
    first_seen: np.ndarray  # smallest candidate index of each group

    @classmethod
    def of(cls, keys: np.ndarray, members: np.ndarray) -> _Groups:
        new_group = np.ones(len(members), dtype=bool)
        new_group[1:] = np.any(keys[1:] != keys[:-1], axis=1)
        starts = np.flatnonzero(new_group)
        first_seen = np.minimum.reduceat(members, starts) if len(members) else np.empty(0, np.int64)
        return cls(members, starts, first_seen)

    @property
    def ends(self) -> np.ndarray:
        return np.append(self.starts[1:], len(self.members))


def select(
    keys: np.ndarray,
    bits: np.ndarray,
    lengths: np.ndarray,
    texts: Callable[[np.ndarray], list[str]],
    target: Target,
    excluded: np.ndarray | None = None,
) -> Selection:
    """Pick the corpus rows among candidates 0..n-1 (stream order).

    keys: (n, 2) uint64 digests of the sequences; bits, lengths: per candidate; texts: program texts of the given
    candidates (read only to break ties); excluded: boolean mask of candidates whose sequence must not appear.
    """
    candidates = np.arange(len(keys), dtype=np.int64)
    dropped = excluded if excluded is not None else np.zeros(len(keys), dtype=bool)
    kept = candidates[~dropped]
    order = np.lexsort((kept, bits[kept], keys[kept, 1], keys[kept, 0]))
    sorted_keys = keys[kept[order]]
    groups = _Groups.of(sorted_keys, kept[order])
    first_sorted = np.sort(groups.first_seen)
    cumulative = np.cumsum(lengths[first_sorted])
    distinct_bytes = int(cumulative[-1]) if len(cumulative) else 0
    if target.pairs is not None:
        met = len(first_sorted) >= target.pairs
        cut = target.pairs - 1
    else:
        met = distinct_bytes >= (target.bytes or 0)
        cut = int(np.searchsorted(cumulative, target.bytes)) if met else 0
    if not met:
        return Selection(None, len(first_sorted), distinct_bytes, len(keys), int(dropped.sum()))
    scanned = int(first_sorted[cut]) + 1
    in_prefix = groups.members < scanned  # filtering keeps the sort order
    groups = _Groups.of(sorted_keys[in_prefix], groups.members[in_prefix])
    best = _best_per_group(groups, bits, texts)
    rows = best[np.argsort(groups.first_seen, kind="stable")]
    return Selection(rows, len(rows), int(lengths[rows].sum()), scanned, int(dropped[:scanned].sum()))


def _best_per_group(groups: _Groups, bits: np.ndarray, texts: Callable[[np.ndarray], list[str]]) -> np.ndarray:
    """Each group's fewest-bits candidate; equal bits are broken by the lexicographically smallest program text."""
    members, starts, ends = groups.members, groups.starts, groups.ends
    best = members[starts].copy()
    member_bits = bits[members]
    runner_up = np.minimum(starts + 1, len(members) - 1)
    tied = np.flatnonzero((ends - starts > 1) & (member_bits[runner_up] == member_bits[starts]))
    if not len(tied):
        return best
    tied_members = [members[s:e][member_bits[s:e] == member_bits[s]] for s, e in zip(starts[tied], ends[tied])]
    all_texts = iter(texts(np.concatenate(tied_members)))  # one read for every tie
    for group, candidates in zip(tied, tied_members):
        best[group] = min((next(all_texts), c) for c in candidates.tolist())[1]
    return best
