"""The RTCE reports' shared vocabulary: orders, labels, bins, file names and record helpers that the report, its
plots and the learning analysis all use (so that none of them imports another for these)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from tracegen.algorithms import PAPER_ORDER, algorithm_label
from tracegen.tasks import Task

Row = Mapping[str, Any]

TASK_ORDER = tuple(task.value for task in Task)
LENGTH_EDGES = (16, 32, 64, 128, 256)  # input-length bins (lo, hi], open at both ends
LENGTH_BINS = (
    f"<={LENGTH_EDGES[0]}",
    *(f"{lo + 1}-{hi}" for lo, hi in pairwise(LENGTH_EDGES)),
    f">{LENGTH_EDGES[-1]}",
)
LENGTH_PLOT_FILE = "length_vs_pass.png"
CATEGORY_PLOT_FILE = "category_difficulty.png"
STEP_PLOT_FILE = "heldout_vs_step.png"
FEW_ITEMS = 30  # fewer items than this: too few to tell differences apart
FEW_MARK = "†"
FEW_NOTE = f"{FEW_MARK} fewer than {FEW_ITEMS} items: too few to tell differences apart.\n"


def radial_plot_file(algorithm: str) -> str:
    return f"radial_{algorithm}.png"


# --- ordering and labels ---------------------------------------------------------------------------------------------


def task_label(name: str) -> str:
    try:
        return Task(name).label
    except ValueError:
        return name


def ordered(values: Iterable[str], order: Sequence[str]) -> list[str]:
    """The distinct `values`: those in `order` first, in its order, then the others sorted."""
    present = set(values)
    return [v for v in order if v in present] + sorted(present - set(order))


def series_keys(records: Iterable[Row]) -> list[tuple[str, float]]:
    """The (model, temperature) pairs: models in first-seen order, temperatures ascending within a model."""
    models: dict[str, set[float]] = {}
    for record in records:
        models.setdefault(record["model"], set()).add(record["temperature"])
    return [(model, t) for model, temps in models.items() for t in sorted(temps)]


def series_label(model: str, temperature: float, several_temperatures: bool) -> str:
    return f"{model} T={temperature:g}" if several_temperatures else model


def several_temperatures(records: Iterable[Row]) -> bool:
    return len({r["temperature"] for r in records}) > 1


def pass_metric(records: Sequence[Row]) -> str:
    """`pass@5` when every record has it, else `pass@1` (n < 5 somewhere): one metric for every comparison."""
    return "pass@5" if records and all(r.get("pass@5") is not None for r in records) else "pass@1"


def mean_of(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def group_by(records: Iterable[Row], keys: Sequence[str]) -> dict[tuple[Any, ...], list[Row]]:
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for record in records:
        groups[tuple(record[k] for k in keys)].append(record)
    return groups


def sorted_records(records: list[dict[str, Any]], extra: Callable[[Row], Any] = lambda r: 0) -> list[dict[str, Any]]:
    """By model (first seen), temperature, algorithm (paper order), task (where present), then `extra`."""
    models = {model: i for i, model in enumerate(dict.fromkeys(r["model"] for r in records))}
    algorithms = {a: i for i, a in enumerate(ordered((r["algorithm"] for r in records), PAPER_ORDER))}
    tasks = {t: i for i, t in enumerate(ordered((r.get("task", "") for r in records), TASK_ORDER))}
    return sorted(
        records,
        key=lambda r: (
            models[r["model"]],
            r["temperature"],
            algorithms[r["algorithm"]],
            tasks[r.get("task", "")],
            extra(r),
        ),
    )


def length_bin(length: int) -> str:
    """The LENGTH_BINS label of `length`."""
    return LENGTH_BINS[sum(length > edge for edge in LENGTH_EDGES)]


def length_bins(rows: Sequence[Row], metric: str | None = None) -> list[dict[str, Any]]:
    """Mean pass per (algorithm, model, temperature, length bin) with the number of items and rows in the bin."""
    metric = metric or pass_metric(rows)
    out = []
    for (algorithm, model, temperature, label), group in group_by(
        [{**r, "bin": length_bin(int(r["input_length"]))} for r in rows], ("algorithm", "model", "temperature", "bin")
    ).items():
        values = [float(r[metric]) for r in group if r.get(metric) is not None]
        out.append(
            {
                "algorithm": algorithm,
                "model": model,
                "temperature": temperature,
                "bin": label,
                "items": len({r["item_id"] for r in group}),
                "rows": len(values),
                "mean": mean_of(values),
            }
        )
    return sorted_records(out, extra=lambda r: LENGTH_BINS.index(r["bin"]))


__all__ = [
    "CATEGORY_PLOT_FILE",
    "FEW_ITEMS",
    "FEW_MARK",
    "FEW_NOTE",
    "LENGTH_BINS",
    "LENGTH_EDGES",
    "LENGTH_PLOT_FILE",
    "PAPER_ORDER",
    "STEP_PLOT_FILE",
    "TASK_ORDER",
    "Row",
    "algorithm_label",
    "group_by",
    "length_bin",
    "length_bins",
    "mean_of",
    "ordered",
    "pass_metric",
    "radial_plot_file",
    "series_keys",
    "series_label",
    "several_temperatures",
    "sorted_records",
    "task_label",
]
