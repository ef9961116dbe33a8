"""W&B runs without the training stack: whether the user is logged in, an evaluation's run, ending a run. Imports
only `wandb` (and that lazily), so an evaluation that logs to W&B does not load TRL, PEFT or transformers for it."""

from __future__ import annotations

import netrc
import os
from pathlib import Path
from typing import Any

_WANDB_HOST = "api.wandb.ai"


def logged_in() -> bool:
    """Whether W&B credentials exist (WANDB_API_KEY, or a ~/.netrc entry for api.wandb.ai as `wandb login` writes)."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        return netrc.netrc().authenticators(_WANDB_HOST) is not None
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False


def start_wandb_run(
    project: str, directory: Path | str, config: dict[str, Any], job_type: str, group: str | None = None
) -> Any:
    """A W&B run for an evaluation, in `group` when given (a training's evaluations: its group): offline unless
    logged in (an explicit WANDB_MODE wins), files under `directory`."""
    import wandb

    if not logged_in():
        os.environ.setdefault("WANDB_MODE", "offline")
    return wandb.init(project=project, dir=str(directory), config=config, job_type=job_type, group=group)


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
