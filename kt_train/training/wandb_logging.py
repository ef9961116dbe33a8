"""W&B for a training run: offline unless the user is logged in, files inside the run's output directory."""

from __future__ import annotations

import netrc
import os
from pathlib import Path
from typing import Any

from kt_train.configs import TrainingConfig

_WANDB_HOST = "api.wandb.ai"


def logged_in() -> bool:
    """Whether W&B credentials exist (WANDB_API_KEY, or a ~/.netrc entry for api.wandb.ai as `wandb login` writes)."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        return netrc.netrc().authenticators(_WANDB_HOST) is not None
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False


def reports_to_wandb(training_args: TrainingConfig) -> bool:
    report_to = training_args.report_to
    return report_to == "wandb" or report_to == "all" or (isinstance(report_to, list) and "wandb" in report_to)


def start_wandb_run(project: str, directory: Path | str, config: dict[str, Any], job_type: str) -> Any:
    """A W&B run for an evaluation: offline unless logged in (an explicit WANDB_MODE wins), files under `directory`."""
    import wandb

    if not logged_in():
        os.environ.setdefault("WANDB_MODE", "offline")
    return wandb.init(project=project, dir=str(directory), config=config, job_type=job_type)


def finish_wandb() -> None:
    """End this process's W&B run, evaluation or training, and reset W&B, so that the next run in the same process
    gets its own settings (the W&B singleton otherwise keeps the first run's WANDB_DIR)."""
    try:
        import wandb
    except ImportError:
        return
    if wandb.run is not None:
        wandb.finish()
    wandb.teardown()


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
