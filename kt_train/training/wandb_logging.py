"""W&B for a training run: offline unless the user is logged in, files inside the run's output directory."""

from __future__ import annotations

import os
from pathlib import Path

from kt_train.configs import TrainingConfig
from kt_train.wandb_runs import finish_wandb, logged_in


def reports_to_wandb(training_args: TrainingConfig) -> bool:
    report_to = training_args.report_to
    return report_to == "wandb" or report_to == "all" or (isinstance(report_to, list) and "wandb" in report_to)


def init_wandb_training(training_args: TrainingConfig, run_id: str | None = None) -> Path | None:
    """Set the WANDB_* environment for the Trainer's W&B callback; return the W&B directory (None: W&B is off).

    Offline (WANDB_MODE=offline) when `wandb_offline` is True, or when it is None and nobody is logged in; an
    explicit WANDB_MODE in the environment wins. WANDB_DIR is the run's output directory (W&B writes `wandb/` there).
    `run_id` (the one recorded with the run's settings) makes a resumed run log to the same W&B run.
    """
    for key in ("WANDB_RUN_ID", "WANDB_RESUME"):  # never the id of an earlier run of this process
        os.environ.pop(key, None)
    if not reports_to_wandb(training_args):
        return None
    if run_id is not None:
        os.environ["WANDB_RUN_ID"], os.environ["WANDB_RESUME"] = run_id, "allow"
    for key, value in (
        ("WANDB_ENTITY", training_args.wandb_entity),
        ("WANDB_PROJECT", training_args.wandb_project),
        ("WANDB_RUN_GROUP", training_args.wandb_run_group),
    ):
        if value is not None:
            os.environ[key] = value
    offline = training_args.wandb_offline if training_args.wandb_offline is not None else not logged_in()
    if offline:
        os.environ.setdefault("WANDB_MODE", "offline")
    directory = Path(training_args.output_dir).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    os.environ["WANDB_DIR"] = str(directory)
    return directory


__all__ = ["finish_wandb", "init_wandb_training", "reports_to_wandb"]
