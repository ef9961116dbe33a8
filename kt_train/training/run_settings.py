"""Whether a training run may go on in its `output_dir`: the settings that determine its result, recorded at its start.

A rerun into the same `output_dir` resumes from the last complete checkpoint (`checkpoints.py`; one a kill left
half-written is removed) only if those settings match: the model, the
training rows (a fingerprint of their content), every training, LoRA and data setting; not where it logs, saves or
reports, nor the post-training evaluation (`eval_*`). With other settings it is refused in one line naming the keys
that differ, unless `overwrite_output_dir` starts it afresh (its checkpoints and results are removed). A finished run
(`train_results.json`, written at its end) is not trained further. The W&B run id is kept with the settings, so a
resumed run goes on logging to the same W&B run.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kt_train.stages import SettingsMismatch  # the one error of every run contract
from kt_train.training.checkpoints import checkpoint_dirs, complete_checkpoints, remove_incomplete

SETTINGS_FILE = "kt_run_settings.json"
MARKED_KEY = "checkpoints_marked_complete"  # runs recorded with it resume only from checkpoints marked complete
FINISHED_FILE = "train_results.json"
RESULT_FILES = (FINISHED_FILE, "all_results.json", "trainer_state.json", SETTINGS_FILE)
IGNORED_KEYS = frozenset(
    {
        "output_dir",
        "overwrite_output_dir",
        "resume_from_checkpoint",
        "report_to",
        "run_name",
        "project",
        "disable_tqdm",
        "log_level",
        "log_level_replica",
        "log_on_each_node",
        "push_to_hub",
        "enable_jit_checkpoint",
        "skip_memory_metrics",
        "local_rank",
        "debug",
        "include_num_input_tokens_seen",
        "torch_empty_cache_steps",
        "restore_callback_states_from_checkpoint",
        "ddp_timeout",
        "do_train",
        "do_eval",
        "do_predict",
        "per_device_eval_batch_size",
        "prediction_loss_only",
        "include_for_metrics",
        "batch_eval_metrics",
        "torch_threads",
    }
)
IGNORED_PREFIXES = ("logging_", "save_", "hub_", "trackio_", "wandb_", "dataloader_", "eval_")


@dataclass(frozen=True)
class RunStart:
    """How a run starts: from `checkpoint` (None: afresh), or not at all (`finished`)."""

    checkpoint: str | None
    finished: bool = False


def _plain(value: Any) -> Any:
    """`value` as JSON (enums by value, paths and other objects by their text)."""
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _matters(key: str) -> bool:
    return key not in IGNORED_KEYS and not key.startswith(IGNORED_PREFIXES) and not key.startswith("_")


def dataset_fingerprint(dataset: Any) -> str:
    """SHA-256 (16 hex digits) of a HF dataset's rows: its Arrow table as IPC bytes, column names and types too."""
    import pyarrow as pa

    table = dataset.data.table if hasattr(dataset.data, "table") else dataset.data
    digest = hashlib.sha256()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=65536):
            writer.write_batch(batch)
    digest.update(sink.getvalue().to_pybytes())
    return digest.hexdigest()[:16]


def run_settings(*configs: Any, dataset: Any = None, world_size: int = 1) -> dict[str, Any]:
    """The settings of a run that determine what it trains: every field that matters of each config dataclass
    (later ones win on a shared name), the rows' fingerprint and the number of processes."""
    settings: dict[str, Any] = {}
    for config in configs:
        for item in dataclasses.fields(config):
            if _matters(item.name):
                settings[item.name] = _plain(getattr(config, item.name))
    if dataset is not None:
        settings["train_rows_fingerprint"] = dataset_fingerprint(dataset)
        settings["train_rows"] = len(dataset)
    settings["world_size"] = world_size
    return settings


def _differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """`key saved -> current` for every setting that differs."""
    unset = "(unset)"
    keys = sorted(set(saved) | set(current))
    return [
        f"{k} {saved.get(k, unset)!r} -> {current.get(k, unset)!r}" for k in keys if saved.get(k) != current.get(k)
    ]


def _write(path: Path, record: Mapping[str, Any]) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)


def start_afresh(output_dir: Path) -> None:
    """Remove a run's checkpoints and results from `output_dir` (other files stay, and are overwritten later)."""
    for checkpoint in checkpoint_dirs(output_dir):
        shutil.rmtree(checkpoint)
    for name in RESULT_FILES:
        (output_dir / name).unlink(missing_ok=True)


def decide(output_dir: str | Path, settings: Mapping[str, Any], overwrite: bool, main_process: bool) -> RunStart:
    """Check `output_dir` against `settings` (see the module's docstring); on the main process, record them for a
    run that starts. Raises SettingsMismatch for a run that may not go on there."""
    directory = Path(output_dir)
    record_path = directory / SETTINGS_FILE
    if overwrite and main_process and directory.is_dir():
        start_afresh(directory)
    saved = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else None
    checkpoints = checkpoint_dirs(directory) if directory.is_dir() else []
    finished = (directory / FINISHED_FILE).is_file()
    if saved is None and (checkpoints or finished) and not overwrite:
        raise SettingsMismatch(
            f"{directory} holds a training run whose settings were not recorded: pass --overwrite_output_dir true to "
            "start afresh there, or use another output_dir"
        )
    if saved is not None:
        differing = _differences(saved["settings"], settings)
        if differing:
            raise SettingsMismatch(
                f"{directory} holds a run with other settings ({'; '.join(differing)}): pass --overwrite_output_dir "
                "true to start afresh there, or use another output_dir"
            )
        if finished:
            return RunStart(None, finished=True)
    elif main_process:
        directory.mkdir(parents=True, exist_ok=True)
        record = {"settings": dict(settings), "wandb_run_id": secrets.token_hex(4), MARKED_KEY: True}
        _write(record_path, record)
    if saved is None or not checkpoints:
        return RunStart(None)
    if not saved.get(MARKED_KEY):  # a run started before checkpoints were marked complete: its last one, as before
        return RunStart(str(checkpoints[-1]))
    if main_process:
        remove_incomplete(directory)
    complete = complete_checkpoints(directory)
    return RunStart(str(complete[-1]) if complete else None)


def wandb_run_id(output_dir: str | Path) -> str | None:
    """The W&B run id recorded for the run in `output_dir` (None: none recorded)."""
    path = Path(output_dir) / SETTINGS_FILE
    return json.loads(path.read_text(encoding="utf-8")).get("wandb_run_id") if path.is_file() else None


__all__ = [
    "FINISHED_FILE",
    "SETTINGS_FILE",
    "RunStart",
    "SettingsMismatch",
    "dataset_fingerprint",
    "decide",
    "run_settings",
    "start_afresh",
    "wandb_run_id",
]
