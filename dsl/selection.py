"""Deduplicate a candidate stream: each sequence once, with its shortest program by bits (ties by program text).

The result is defined on the candidate stream alone, so it does not depend on block size or worker count: scan
candidates in order (skipping excluded sequences) up to the first candidate at which the target is met (N distinct
sequences, or at least B bytes of distinct sequences); rows are the distinct sequences in order of first appearance,
each carried by its best candidate within that prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa


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
    distinct: int  # distinct non-excluded sequences among all candidates seen
    distinct_bytes: int
    candidates: int  # candidates scanned (the prefix, or all when short)
    excluded: int  # candidates dropped because their sequence is excluded


def digest_keys(digests: pa.Array) -> np.ndarray:
    """(n, 2) uint64 view of 16-byte digests."""
    buffer = pa.concat_arrays(digests.chunks) if isinstance(digests, pa.ChunkedArray) else digests
    raw = np.frombuffer(buffer.buffers()[1], dtype=np.uint8, count=16 * len(buffer), offset=16 * buffer.offset)
    return raw.view(np.uint64).reshape(-1, 2)


def _groups(keys: np.ndarray, bits: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort by (sequence, bits, index); return the sort order, group starts and each group's first index."""
    order = np.lexsort((candidates, bits, keys[:, 1], keys[:, 0]))
    sorted_keys = keys[order]
    new_group = np.ones(len(order), dtype=bool)
    new_group[1:] = np.any(sorted_keys[1:] != sorted_keys[:-1], axis=1)
    starts = np.flatnonzero(new_group)
    first_seen = np.minimum.reduceat(candidates[order], starts) if len(order) else np.empty(0, np.int64)
    return order, starts, first_seen


def select(
    digests: pa.ChunkedArray,
    bits: np.ndarray,
    lengths: np.ndarray,
    programs: pa.ChunkedArray,
    target: Target,
    exclude: np.ndarray | None = None,
) -> Selection:
    """Pick the rows of the corpus from all candidates generated so far (in stream order)."""
    keys = digest_keys(digests)
    candidates = np.arange(len(keys), dtype=np.int64)
    dropped = np.zeros(len(keys), dtype=bool)
    if exclude is not None and len(exclude):
        dropped = np.isin(np.ascontiguousarray(keys).view("V16").ravel(), np.ascontiguousarray(exclude).view("V16").ravel())
        keys, candidates = keys[~dropped], candidates[~dropped]
    order, starts, first_seen = _groups(keys, bits[candidates], candidates)
    first_sorted = np.sort(first_seen)
    cumulative = np.cumsum(lengths[first_sorted])
    distinct_bytes = int(cumulative[-1]) if len(cumulative) else 0
    if target.pairs is not None:
        met = len(first_sorted) >= target.pairs
        cut = target.pairs - 1
    else:
        met = distinct_bytes >= target.bytes
        cut = int(np.searchsorted(cumulative, target.bytes)) if met else 0
    if not met:
        return Selection(None, len(first_sorted), distinct_bytes, len(bits), int(dropped.sum()))
    last = first_sorted[cut]
    prefix = candidates <= last
    keys, candidates = keys[prefix], candidates[prefix]
    order, starts, first_seen = _groups(keys, bits[candidates], candidates)
    best = candidates[order[starts]]
    best = _break_ties_by_text(best, order, starts, candidates, bits, programs)
    rows = best[np.argsort(first_seen, kind="stable")]
    scanned = int(last) + 1
    return Selection(rows, len(rows), int(lengths[rows].sum()), scanned, int(dropped[:scanned].sum()))


def _break_ties_by_text(
    best: np.ndarray,
    order: np.ndarray,
    starts: np.ndarray,
    candidates: np.ndarray,
    bits: np.ndarray,
    programs: pa.ChunkedArray,
) -> np.ndarray:
    """Where a group's two best candidates have equal bits, choose the lexicographically smallest program text."""
    sorted_candidates = candidates[order]
    sorted_bits = bits[sorted_candidates]
    ends = np.append(starts[1:], len(order))
    tied = np.flatnonzero((ends - starts > 1) & (sorted_bits[np.minimum(starts + 1, len(order) - 1)] == sorted_bits[starts]))
    best = best.copy()
    for group in tied:
        start, end = starts[group], ends[group]
        members = sorted_candidates[start:end][sorted_bits[start:end] == sorted_bits[start]]
        texts = programs.take(pa.array(members)).to_pylist()
        best[group] = members[min(range(len(members)), key=lambda k: (texts[k], members[k]))]
    return best
