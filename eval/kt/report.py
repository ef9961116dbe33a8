"""The outputs of a KT evaluation: `summary.json`, a markdown report, plots and (optionally) a W&B run."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval.kt import plots
from eval.kt.line_search import line_search_summary
from eval.kt.literal_tail import literal_tail_summary
from eval.kt.scoring import PREFIXES, aggregate, search_summary
from kt_train.stages import SUMMARY_FILE

if TYPE_CHECKING:
    from eval.kt.dataset import KTDataset
    from eval.kt.evaluate import KTEvalConfig

REPORT_FILE = "report.md"
PLOT_FILE = "metrics_by_length.png"
PREFIX_PLOT_FILE = "correct_prefix.png"
PLOT_FILES = (PLOT_FILE, PREFIX_PLOT_FILE)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def search_lines(search: Mapping[str, Any] | None) -> list[str]:
    """The report's line on a `--search` run: the greedy program alone beside the search."""
    if not search:
        return []
    g = search["greedy"]
    return [
        f"Search over {search['k']} programs a sequence ({search['programs_checked']} checked): the greedy program "
        f"alone has Accuracy {_fmt(g['accuracy'])}, CompressionRate {_fmt(g['compression_rate'])}; the samples "
        f"made {search['items_found_by_samples']} more item(s) correct and {search['items_shortened_by_samples']} "
        "shorter.",
        "",
    ]


def line_search_lines(search: Mapping[str, Any] | None) -> list[str]:
    """The report's line on a `--line-search` run: what the search cost."""
    if not search:
        return []
    return [
        f"Line search ({search['samples']} samples for a failing line): {search['greedy_lines']} lines generated "
        f"greedily and {search['sampled_lines']} sampled, for {search['items_resampled']} of {search['items']} "
        f"sequences; {search['backtracks']} line(s) taken back.",
        "",
    ]


def literal_tail_lines(tails: Mapping[str, Any] | None) -> list[str]:
    """The report's line on a `--literal-tail` run: the model's own programs beside the completed ones."""
    if not tails:
        return []
    model, share = tails["model"], tails["numbers_written_by_model"]
    return [
        f"Literal tail: {tails['items_with_tail']} item(s) keep a program of the model's lines finished with the rest "
        f"of the sequence as a literal (the model's lines wrote {_fmt(share)} of those sequences' numbers); the "
        f"model's own programs alone have Accuracy {_fmt(model['accuracy'])}, CompressionRate "
        f"{_fmt(model['compression_rate'])}, Precision {_fmt(model['precision'])}. Accuracy above counts the finished "
        "programs as correct (they are).",
        "",
    ]


def markdown_report(summary: Mapping[str, Any]) -> str:
    """A markdown table of the headline metrics, one per length bucket and the verdict counts."""
    s, m = summary["settings"], summary["metrics"]
    who = s.get("model") or f"predictions {s.get('predictions')}"
    lines = [
        f"# KT evaluation: {who}" + (f" + adapter {s['adapter']}" if s.get("adapter") else ""),
        "",
        f"Set `{s['dataset']}` ({summary['modality']}, {m['num_items']} sequences, {m['total_symbols']} symbols, "
        f"fingerprint {s['dataset_fingerprint']}); mode {s['mode']}, prompt {s['prompt']}, "
        f"{s['num_samples']} sample(s) per sequence, program prior {summary['program_prior']}.",
        "",
        "| Accuracy | CompressionRate | CR (mean) | CR (gzip back-off) | Precision | Precision (joint gzip) | "
        "Executable | Executable (release) | Exec. accuracy |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {_fmt(m['accuracy'])} | {_fmt(m['compression_rate'])} | {_fmt(m['compression_rate_mean'])} | "
        f"{_fmt(m['compression_rate_gzip_backoff'])} | {_fmt(m['precision'])} | "
        f"{_fmt(m['precision_joint_gzip'])} | {_fmt(m['executable'])} | {_fmt(m['executable_official'])} | "
        f"{_fmt(m['executable_accuracy'])} |",
        "",
        f"Gzip input `{s['gzip_encoding']}`. Precision is the mean per sequence; Precision (joint gzip) the "
        "release's, for the gzip prior: the correct programs in one gzip stream over their sequences in another. "
        "Executable (release): outputs of 1 to 256 elements only, as the release's post-processing.",
        "",
        *search_lines(m.get("search")),
        *line_search_lines(m.get("line_search")),
        *literal_tail_lines(m.get("literal_tail")),
        "Prefix accuracy: "
        + ", ".join(f"@{k} {_fmt(m['prefix_accuracy'][str(k)])}" for k in PREFIXES)
        + f"; mean longest correct prefix {_fmt(m['mean_correct_prefix'], 1)}.",
        "",
        "| length | n | Accuracy | CompressionRate |",
        "|---|---:|---:|---:|",
        *(
            f"| {b['bucket']} | {b['n']} | {_fmt(b['accuracy'])} | {_fmt(b['compression_rate'])} |"
            for b in m["by_length"]
        ),
        "",
        "| verdict | samples |",
        "|---|---:|",
        *(f"| {verdict} | {count} |" for verdict, count in m["verdicts"].items()),
        "",
        *(f"![{name.removesuffix('.png')}]({name})" for name in PLOT_FILES),
    ]
    return "\n".join(lines) + "\n"


ITEM_COLUMNS = ("id", "length", "correct", "correct_prefix", "program_bits", "y_bits")
"""The columns of the W&B table of items (those a row has)."""


def log_to_wandb(
    summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], output: Path, project: str, group: str | None = None
) -> None:
    """Log the metrics, a table of the items and the plots (keyed by name, without `.png`) to W&B, in `group` when
    given (offline unless logged in; files under the output folder)."""
    import wandb

    from kt_train.wandb_runs import finish_wandb, start_wandb_run

    run = start_wandb_run(project, output, dict(summary["settings"]), "kt-eval", group)
    try:
        flat = {k: v for k, v in summary["metrics"].items() if isinstance(v, int | float)}
        flat |= {f"prefix_accuracy@{k}": v for k, v in summary["metrics"]["prefix_accuracy"].items()}
        columns = [c for c in ITEM_COLUMNS if rows and c in rows[0]]
        items = wandb.Table(columns=columns, data=[[row.get(c) for c in columns] for row in rows])
        images = {name.removesuffix(".png"): wandb.Image(str(output / name)) for name in PLOT_FILES}
        run.log(flat | images | {"items": items})
    finally:
        finish_wandb()


def write_outputs(
    rows: Sequence[Mapping[str, Any]],
    dataset: KTDataset,
    config: KTEvalConfig,
    settings: Mapping[str, Any],
    output: Path,
    line_costs: Sequence[Mapping[str, int]] = (),
) -> dict[str, Any]:
    """Write summary.json, report.md and the plots (and log to W&B when asked); return the summary. `line_costs`:
    the lines each sequence's line search generated (`--line-search`)."""
    metrics = aggregate(rows, dataset.symbol_bits, config.gzip_encoding, config.prior)
    if config.search > 1:
        metrics["search"] = search_summary(
            rows, dataset.symbol_bits, config.search, config.gzip_encoding, config.prior
        )
    if config.line_search:
        metrics["line_search"] = line_search_summary(line_costs, config.line_search)
    if config.literal_tail:
        metrics["literal_tail"] = literal_tail_summary(rows, dataset.symbol_bits, config.gzip_encoding, config.prior)
    summary = {
        "settings": dict(settings),
        "modality": dataset.modality,
        "symbol_bits": dataset.symbol_bits,
        "program_prior": config.prior,
        "metrics": metrics,
    }
    (output / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (output / REPORT_FILE).write_text(markdown_report(summary), encoding="utf-8")
    plots.write_plots(rows, metrics, output, plots.caption(settings, dataset.modality, len(rows)), PLOT_FILES)
    if config.wandb_project:
        log_to_wandb(summary, rows, output, config.wandb_project, config.wandb_group)
    return summary


__all__ = [
    "PLOT_FILE",
    "PLOT_FILES",
    "PREFIX_PLOT_FILE",
    "REPORT_FILE",
    "SUMMARY_FILE",
    "log_to_wandb",
    "markdown_report",
    "write_outputs",
]
