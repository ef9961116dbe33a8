"""Did training help? Adapters against the base model on the same held-out prompts: per-prompt EM / ES paired at the
lowest temperature, the mean change with a paired bootstrap CI and a verdict (`learning_table`, `learning_markdown`),
and the points of held-out EM / ES against training step (`checkpoint_points`).

Each comparison also counts the distinct answers each model gave (`base_distinct`, `adapter_distinct`): a model that
answers the same few strings to every item (AE's float under greedy decoding) still gets ES from its length and digits,
and the report says so instead of letting such an ES change read as learning.

Input: the scored rows of `eval.rtce.report` (one per model label x temperature x prompt, `em` / `es` lists,
`predictions` where generated) and its aggregates.
Model labels: `base`, an adapter (`lzw`), or a checkpoint of one (`lzw@20`, left out of the table).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from eval.bootstrap import entry_seed, paired_bootstrap_ci
from eval.metrics import canonical_json
from eval.rtce.vocabulary import (
    FEW_ITEMS,
    PAPER_ORDER,
    TASK_ORDER,
    Row,
    algorithm_label,
    ordered,
    task_label,
)

BASE = "base"
METRICS = (("em", "EM"), ("es", "ES"))
LEARNED, WORSE, NO_CHANGE = "learned", "worse", "no detectable change"
VERDICTS = (LEARNED, WORSE, NO_CHANGE)
LEARNING_COLUMNS = (
    "model",
    "algorithm",
    "task",
    "metric",
    "temperature",
    "n",
    "base",
    "adapter",
    "diff",
    "ci_low",
    "ci_high",
    "verdict",
    "few_items",
    "base_distinct",
    "adapter_distinct",
)
FIXED_ANSWER_SHARE = 0.2
"""A model with at most this many distinct answers per item (at least 1 in all) answers fixed strings, whatever the
input."""


def verdict(ci_low: float, ci_high: float) -> str:
    """`learned` when the whole CI is above zero, `worse` when below, else `no detectable change`."""
    return LEARNED if ci_low > 0 else WORSE if ci_high < 0 else NO_CHANGE


# --- the table -------------------------------------------------------------------------------------------------------


def is_adapter(label: str, base: str = BASE) -> bool:
    """An adapter's own label: not the base, not a checkpoint (`lzw@20`)."""
    return label != base and "@" not in label


def _prompt_values(rows: Iterable[Row], metric: str) -> dict[tuple[str, float], dict[str, float]]:
    """Per (model, temperature): the mean of `metric` over each prompt's completions, by prompt id."""
    values: dict[tuple[str, float], dict[str, float]] = defaultdict(dict)
    for row in rows:
        scores = [float(x) for x in row[metric]]
        if scores:
            values[(row["model"], row["temperature"])][row["id"]] = sum(scores) / len(scores)
    return values


def _prompt_answers(rows: Iterable[Row]) -> dict[tuple[str, float], dict[str, str]]:
    """Per (model, temperature): each prompt's answers (the `predictions` list) as canonical JSON, by prompt id; rows
    without `predictions` (scored elsewhere) are left out."""
    answers: dict[tuple[str, float], dict[str, str]] = defaultdict(dict)
    for row in rows:
        if "predictions" in row:
            answers[(row["model"], row["temperature"])][row["id"]] = canonical_json(row["predictions"])
    return answers


def _distinct(answers: Mapping[str, str], prompts: Iterable[str]) -> int | None:
    """How many different answers over `prompts`; None when any of them has no recorded answer."""
    chosen = list(prompts)
    if not chosen or any(p not in answers for p in chosen):
        return None
    return len({answers[p] for p in chosen})


def _comparison(base: Mapping[str, float], adapter: Mapping[str, float], seed: int) -> dict[str, Any]:
    """The paired figures of two models over the prompts both answered."""
    shared = sorted(base.keys() & adapter.keys())
    base_values = np.array([base[i] for i in shared])
    adapter_values = np.array([adapter[i] for i in shared])
    low, high = paired_bootstrap_ci(adapter_values - base_values, seed)
    return {
        "n": len(shared),
        "base": float(base_values.mean()),
        "adapter": float(adapter_values.mean()),
        "diff": float(adapter_values.mean() - base_values.mean()),
        "ci_low": low,
        "ci_high": high,
        "verdict": verdict(low, high),
        "few_items": len(shared) < FEW_ITEMS,
    }


def _lowest_shared_temperature(
    values: Mapping[tuple[str, float], Mapping[str, float]], base: str, model: str
) -> float | None:
    """The lowest temperature at which `base` and `model` answered a prompt in common."""
    temperatures = sorted({t for m, t in values if m == model})
    return next((t for t in temperatures if values.get((base, t), {}).keys() & values[(model, t)].keys()), None)


def learning_table(rows: Sequence[Row], seed: int, base: str = BASE) -> list[dict[str, Any]]:
    """One entry per (adapter, algorithm, task, metric in em / es): base and adapter paired on the same prompts at
    the lowest temperature both answered, the mean change (fractions) with its 95% paired bootstrap CI and verdict.

    Parameters:
        rows: scored rows (`id`, `model`, `temperature`, `algorithm`, `task`, `em`, `es`).
        seed: mixed with each entry's key into that entry's bootstrap seed.
        base: the base model's label.
    """
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        groups[(row["algorithm"], row["task"])].append(row)
    table = []
    for (algorithm, task), group in groups.items():
        models = sorted({r["model"] for r in group if is_adapter(r["model"], base)})
        answers = _prompt_answers(group)
        for metric, _ in METRICS:
            values = _prompt_values(group, metric)
            for model in models:
                temperature = _lowest_shared_temperature(values, base, model)
                if temperature is None:
                    continue
                pair = values[(base, temperature)], values[(model, temperature)]
                figures = _comparison(*pair, entry_seed(seed, model, algorithm, task, metric))
                shared = pair[0].keys() & pair[1].keys()
                distinct = {
                    f"{side}_distinct": _distinct(answers.get((label, temperature), {}), shared)
                    for side, label in (("base", base), ("adapter", model))
                }
                keys = {"model": model, "algorithm": algorithm, "task": task, "metric": metric}
                table.append(keys | {"temperature": temperature} | figures | distinct)
    return _in_paper_order(table)


def _in_paper_order(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    algorithms = ordered((e["algorithm"] for e in table), PAPER_ORDER)
    tasks = ordered((e["task"] for e in table), TASK_ORDER)
    metrics = [metric for metric, _ in METRICS]
    return sorted(
        table,
        key=lambda e: (
            algorithms.index(e["algorithm"]),
            tasks.index(e["task"]),
            metrics.index(e["metric"]),
            e["model"],
        ),
    )


# --- markdown --------------------------------------------------------------------------------------------------------


def _points(fraction: float, signed: bool = False) -> str:
    value = round(100 * fraction, 1) + 0.0  # no "-0.0"
    return f"{value:+.1f}" if signed else f"{value:.1f}"


def _verdict_cell(entry: Mapping[str, Any]) -> str:
    return entry["verdict"] + (f" (n < {FEW_ITEMS}: too few to tell)" if entry["few_items"] else "")


def _row_cells(entry: Mapping[str, Any], with_model: bool) -> list[str]:
    return [
        algorithm_label(entry["algorithm"]),
        *([entry["model"]] if with_model else []),
        task_label(entry["task"]),
        dict(METRICS)[entry["metric"]],
        str(entry["n"]),
        _points(entry["base"]),
        _points(entry["adapter"]),
        _points(entry["diff"], signed=True),
        f"[{_points(entry['ci_low'], signed=True)}, {_points(entry['ci_high'], signed=True)}]",
        _verdict_cell(entry),
    ]


def verdict_counts(table: Sequence[Mapping[str, Any]]) -> str:
    """'3 of 16 comparisons learned, 1 worse, 12 no detectable change.' (and how many had too few items)."""
    counts = {v: sum(e["verdict"] == v for e in table) for v in VERDICTS}
    few = sum(e["few_items"] for e in table)
    line = f"{counts[LEARNED]} of {len(table)} comparisons {LEARNED}, {counts[WORSE]} {WORSE}, "
    line += f"{counts[NO_CHANGE]} {NO_CHANGE}."
    return line + (f" {few} of them had fewer than {FEW_ITEMS} items." if few else "")


def fixed_answers(entry: Mapping[str, Any]) -> list[str]:
    """The sides (`base`, `adapter`) of a comparison that gave the same few strings to every item: at most
    `FIXED_ANSWER_SHARE` of its n items (at least 1) distinct answers."""
    limit = max(1, int(FIXED_ANSWER_SHARE * entry["n"]))
    counts = {side: entry.get(f"{side}_distinct") for side in ("base", "adapter")}
    return [side for side, count in counts.items() if count is not None and count <= limit]


def fixed_answer_notes(table: Sequence[Mapping[str, Any]]) -> str:
    """One line per (adapter, algorithm, task) whose adapter answered fixed strings: its ES change then measures how
    close those strings are to the references, not answers computed from the inputs. (The base model answers fixed
    strings to most tasks; only the adapter's side changes what a reader may conclude.)"""
    lines = []
    for entry in table:
        if entry["metric"] != "es" or "adapter" not in fixed_answers(entry):
            continue
        where = f"{algorithm_label(entry['algorithm'])} {task_label(entry['task'])} ({entry['model']})"
        lines.append(
            f"- {where}: {entry['adapter_distinct']} distinct answers over {entry['n']} items (base "
            f"{entry['base_distinct']}): the adapter gives the same few answers whatever the input, so its ES change "
            "compares fixed strings with the references, not answers computed from the inputs."
        )
    return "\n".join(lines)


def learning_markdown(table: Sequence[Mapping[str, Any]]) -> str:
    """The section at the top of report.md: one row per comparison from `learning_table`, then the verdict counts.
    An Adapter column appears when an adapter's label is not its algorithm's name."""
    heading = "## Did training help? (adapter vs base, held-out items)\n\n"
    if not table:
        return heading + "No adapter in this evaluation to compare with the base model.\n"
    temperatures = ", ".join(f"{t:g}" for t in sorted({e["temperature"] for e in table}))
    explanation = (
        "Each adapter against the base model, paired over the same held-out items (per item: the mean over its "
        f"completions; temperature {temperatures}); Change and its 95% paired bootstrap CI in points; `learned` "
        f"means the whole CI is above zero, `worse` below. Rows with fewer than {FEW_ITEMS} items are marked.\n\n"
    )
    with_model = any(e["model"] != e["algorithm"] for e in table)
    header = ["Algorithm", *(["Adapter"] if with_model else []), "Task", "Metric"]
    header += ["n", "Base %", "Adapter %", "Change", "95% CI", "Verdict"]
    text_columns = len(header) - 6
    align = ["---"] * text_columns + ["---:"] * 5 + ["---"]
    lines = [header, align, *(_row_cells(e, with_model) for e in table)]
    body = "\n".join(f"| {' | '.join(cells)} |" for cells in lines)
    notes = fixed_answer_notes(table)
    notes = f"\nFixed answers:\n\n{notes}\n" if notes else ""
    return f"{heading}{explanation}{body}\n\n{verdict_counts(table)}\n{notes}"


# --- held-out figures against training step --------------------------------------------------------------------------


def of_algorithm(label: str, algorithm: str) -> bool:
    """`label` is the adapter of `algorithm` (`lzw`) or one of its checkpoints (`lzw@20`)."""
    return label == algorithm or label.startswith(f"{algorithm}@")


def checkpoint_points(aggregated: Sequence[Row], steps: Mapping[str, int], base: str = BASE) -> list[dict[str, Any]]:
    """Held-out EM / ES per (model, algorithm, task) at the lowest temperature: the base at step 0 and each adapter or
    checkpoint label of an algorithm at `steps[label]` (labels without a step left out); algorithms without such a
    label are left out. Records: model, algorithm, task, step, n, em, es; by algorithm, task, step."""
    if not aggregated:
        return []
    temperature = min(r["temperature"] for r in aggregated)
    lowest = [r for r in aggregated if r["temperature"] == temperature]
    algorithms = ordered((r["algorithm"] for r in lowest), PAPER_ORDER)
    tasks = ordered((r["task"] for r in lowest), TASK_ORDER)
    points = []
    for algorithm in algorithms:
        mine = [r for r in lowest if r["algorithm"] == algorithm]
        stepped = {
            r["model"]: steps[r["model"]] for r in mine if of_algorithm(r["model"], algorithm) and r["model"] in steps
        }
        if stepped:
            at = {base: steps.get(base, 0)} | stepped
            points += [_point(r, at[r["model"]]) for r in mine if r["model"] in at]
    return sorted(
        points, key=lambda p: (algorithms.index(p["algorithm"]), tasks.index(p["task"]), p["step"], p["model"])
    )


def _point(record: Row, step: int) -> dict[str, Any]:
    keys = ("model", "algorithm", "task")
    return {k: record[k] for k in keys} | {
        "step": step,
        "n": record["n_items"],
        "em": record["em"],
        "es": record["es"],
    }


__all__ = [
    "BASE",
    "LEARNING_COLUMNS",
    "VERDICTS",
    "checkpoint_points",
    "fixed_answer_notes",
    "fixed_answers",
    "is_adapter",
    "learning_markdown",
    "learning_table",
    "of_algorithm",
    "verdict",
    "verdict_counts",
]
