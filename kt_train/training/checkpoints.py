"""Checkpoints resumed from only once complete (issue 38).

The Trainer writes `checkpoint-N` in place (model or adapter, optimizer, scheduler, the RNG states of every process,
trainer state; under ZeRO-3 each process its own shards), so a run killed while writing leaves a folder that looks
like a checkpoint. `CheckpointComplete`, a callback, writes `COMPLETE_FILE` into the folder once every process has
written its part (a barrier first), listing each file and its size; `complete_checkpoints` lists only the folders
whose files are all there at those sizes, and `remove_incomplete` deletes the others before a run resumes, so that the
Trainer neither resumes from one nor writes into one. With `save_total_limit: 1` the Trainer deletes the previous
checkpoint before the new one is marked: a kill in that moment leaves none complete and the run starts again from
step 0, never from a half-written one (keep `save_total_limit` at 2 or more).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

COMPLETE_FILE = "kt_checkpoint_complete.json"
logger = logging.getLogger(__name__)


def checkpoint_dirs(output_dir: Path) -> list[Path]:
    """Every `checkpoint-N` folder in `output_dir`, complete or not, by step."""
    found = output_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*")
    steps = [p for p in found if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return sorted(steps, key=lambda p: int(p.name.split("-")[-1]))


def _files(folder: Path) -> dict[str, int]:
    """Each file under `folder` (its path relative to it) and its size, the completion record left out."""
    return {
        str(path.relative_to(folder)): path.stat().st_size
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != COMPLETE_FILE
    }


def is_complete(folder: Path) -> bool:
    """Whether `folder` holds its completion record and every file the record lists, at the recorded size."""
    try:
        record = json.loads((folder / COMPLETE_FILE).read_text(encoding="utf-8"))
        files = record["files"]
        return isinstance(files, dict) and all((folder / name).stat().st_size == size for name, size in files.items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def complete_checkpoints(output_dir: Path) -> list[Path]:
    """The complete `checkpoint-N` folders of `output_dir`, by step."""
    return [folder for folder in checkpoint_dirs(output_dir) if is_complete(folder)]


def remove_incomplete(output_dir: Path) -> list[Path]:
    """Delete the `checkpoint-N` folders of `output_dir` that are not complete (a run killed while writing them);
    the folders removed."""
    removed = [folder for folder in checkpoint_dirs(output_dir) if not is_complete(folder)]
    for folder in removed:
        logger.warning("removing %s: it was not completely written (the run was stopped while saving it)", folder)
        shutil.rmtree(folder)
    return removed


def mark_complete(folder: Path, global_step: int) -> None:
    """Write the completion record of `folder` (atomically: a temporary file renamed)."""
    record = {"global_step": global_step, "files": _files(folder)}
    temporary = folder / f".{COMPLETE_FILE}.tmp"
    temporary.write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(temporary, folder / COMPLETE_FILE)


def _barrier() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


class CheckpointComplete(TrainerCallback):
    """Marks each checkpoint complete once every process has saved its part (see the module's docstring)."""

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        _barrier()
        if state.is_world_process_zero:
            folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
            if folder.is_dir():
                mark_complete(folder, state.global_step)
        _barrier()


__all__ = [
    "COMPLETE_FILE",
    "CheckpointComplete",
    "checkpoint_dirs",
    "complete_checkpoints",
    "is_complete",
    "mark_complete",
    "remove_incomplete",
]
