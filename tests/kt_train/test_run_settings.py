"""When a training run may go on in its output directory (kt_train.training.run_settings): the same settings resume,
other settings are refused in one line naming them, a finished run is not trained again, overwrite starts afresh."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets import Dataset
from trl import ModelConfig

from kt_train.configs import DataArguments, SFTConfig
from kt_train.training.checkpoints import COMPLETE_FILE, complete_checkpoints, mark_complete
from kt_train.training.run_settings import (
    FINISHED_FILE,
    SETTINGS_FILE,
    RunStart,
    SettingsMismatch,
    decide,
    run_settings,
    wandb_run_id,
)


def _settings(tmp_path: Path, rows: int = 4, **overrides: object) -> dict:
    values: dict[str, object] = {"output_dir": str(tmp_path / "run"), "max_steps": 2, "learning_rate": 1e-3}
    values.update(overrides)
    dataset = Dataset.from_dict({"prompt": [f"p{i}" for i in range(rows)], "completion": ["c"] * rows})
    return run_settings(DataArguments(), SFTConfig(**values), ModelConfig(lora_r=8), dataset=dataset)


def test_what_matters(tmp_path: Path) -> None:
    base = _settings(tmp_path)
    assert {"learning_rate", "max_steps", "lora_r", "model_name_or_path", "train_rows_fingerprint"} <= set(base)
    assert not {"output_dir", "logging_steps", "save_steps", "report_to", "run_name"} & set(base)
    assert _settings(tmp_path, logging_steps=3, save_steps=7, report_to=["wandb"], output_dir="elsewhere") == base
    assert _settings(tmp_path, learning_rate=2e-3) != base
    assert _settings(tmp_path, rows=5)["train_rows_fingerprint"] != base["train_rows_fingerprint"]
    json.dumps(base)  # recordable


def _checkpoint(run: Path, step: int, complete: bool = True) -> Path:
    folder = run / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "optimizer.pt").write_bytes(b"x" * 100)
    (folder / "trainer_state.json").write_text("{}")
    if complete:
        mark_complete(folder, step)
    return folder


def test_same_settings_resume_from_the_last_checkpoint(tmp_path: Path) -> None:
    run, settings = tmp_path / "run", _settings(tmp_path)
    assert decide(run, settings, overwrite=False, main_process=True) == RunStart(None)  # afresh, recorded
    run_id = wandb_run_id(run)
    assert run_id and json.loads((run / SETTINGS_FILE).read_text())["settings"] == settings
    for step in (2, 9, 10):
        _checkpoint(run, step)
    assert decide(run, settings, overwrite=False, main_process=True) == RunStart(str(run / "checkpoint-10"))
    assert wandb_run_id(run) == run_id  # the same W&B run goes on


def test_a_checkpoint_left_half_written_is_removed_and_the_last_complete_one_resumed(tmp_path: Path) -> None:
    run, settings = tmp_path / "run", _settings(tmp_path)
    decide(run, settings, overwrite=False, main_process=True)
    _checkpoint(run, 4)
    unmarked = _checkpoint(run, 6, complete=False)  # killed before the record was written
    truncated = _checkpoint(run, 8)
    (truncated / "optimizer.pt").write_bytes(b"x" * 10)  # a file the record lists at another size
    assert [p.name for p in complete_checkpoints(run)] == ["checkpoint-4"]
    assert decide(run, settings, overwrite=False, main_process=False) == RunStart(str(run / "checkpoint-4"))
    assert unmarked.exists()  # other processes only read
    assert decide(run, settings, overwrite=False, main_process=True) == RunStart(str(run / "checkpoint-4"))
    assert not unmarked.exists() and not truncated.exists()
    _checkpoint(run, 6, complete=False)
    (run / "checkpoint-4" / COMPLETE_FILE).unlink()
    assert decide(run, settings, overwrite=False, main_process=True) == RunStart(None)  # none complete: from step 0
    assert not list(run.glob("checkpoint-*"))


def test_a_run_started_before_checkpoints_were_marked_resumes_from_its_last_one(tmp_path: Path) -> None:
    """Its checkpoints have no completion record: they are kept (nothing lost), the last one resumed as before."""
    run, settings = tmp_path / "run", _settings(tmp_path)
    decide(run, settings, overwrite=False, main_process=True)
    record = json.loads((run / SETTINGS_FILE).read_text())
    del record["checkpoints_marked_complete"]
    (run / SETTINGS_FILE).write_text(json.dumps(record))
    _checkpoint(run, 4, complete=False)
    _checkpoint(run, 8, complete=False)
    assert decide(run, settings, overwrite=False, main_process=True) == RunStart(str(run / "checkpoint-8"))
    assert (run / "checkpoint-4").is_dir()


def test_a_finished_run_is_not_trained_further(tmp_path: Path) -> None:
    run, settings = tmp_path / "run", _settings(tmp_path)
    decide(run, settings, overwrite=False, main_process=True)
    _checkpoint(run, 2)
    (run / FINISHED_FILE).write_text("{}")
    assert decide(run, settings, overwrite=False, main_process=True) == RunStart(None, finished=True)


def test_other_settings_are_refused_naming_the_keys(tmp_path: Path) -> None:
    run = tmp_path / "run"
    decide(run, _settings(tmp_path), overwrite=False, main_process=True)
    _checkpoint(run, 2)
    expected = r"learning_rate 0\.001 -> 0\.002; max_steps 2 -> 3.*overwrite_output_dir"
    with pytest.raises(SettingsMismatch, match=expected):
        decide(run, _settings(tmp_path, learning_rate=2e-3, max_steps=3), overwrite=False, main_process=True)
    assert (run / "checkpoint-2").is_dir()  # nothing was touched


def test_overwrite_starts_afresh(tmp_path: Path) -> None:
    run = tmp_path / "run"
    decide(run, _settings(tmp_path), overwrite=False, main_process=True)
    old_id = wandb_run_id(run)
    _checkpoint(run, 2)
    (run / FINISHED_FILE).write_text("{}")
    (run / "notes.txt").write_text("mine")
    changed = _settings(tmp_path, learning_rate=2e-3)
    assert decide(run, changed, overwrite=True, main_process=True) == RunStart(None)
    assert not (run / "checkpoint-2").exists() and not (run / FINISHED_FILE).exists()
    assert (run / "notes.txt").read_text() == "mine"  # only the run's own files go
    assert json.loads((run / SETTINGS_FILE).read_text())["settings"] == changed and wandb_run_id(run) != old_id


def test_a_run_without_recorded_settings_is_not_resumed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _checkpoint(run, 2)  # made before settings were recorded
    with pytest.raises(SettingsMismatch, match="settings were not recorded"):
        decide(run, _settings(tmp_path), overwrite=False, main_process=True)


def test_other_processes_only_read(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert decide(run, _settings(tmp_path), overwrite=False, main_process=False) == RunStart(None)
    assert not (run / SETTINGS_FILE).exists()  # the main process records them
