"""The run contract (kt_train.stages, kt_train.records): settings refused or started afresh, failed items retried,
shards merged byte-identical to one run, kill -9 at any point then resume = the same bytes."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kt_train.records import count_failures, read_jsonl
from kt_train.stages import RunFolder, RunOptions, SettingsMismatch, content_hash

ITEMS = [f"item-{i:03d}" for i in range(23)]


def _make(batch: Sequence[str]) -> list[dict[str, Any]]:
    return [{"id": item, "value": sum(map(ord, item)) ** 2} for item in batch]


def _run(output: Path, options: RunOptions | None = None, settings: dict[str, Any] | None = None) -> list[dict]:
    folder = RunFolder(output, settings or {"seed": 1}, options)
    records = folder.run("records", ITEMS, lambda i: i, _make, 4, False)
    folder.finish({"n": len(records)})
    return records


def test_other_settings_are_refused_naming_the_keys_and_overwrite_starts_afresh(tmp_path: Path) -> None:
    (tmp_path / "predictions.jsonl").write_text('{"id": "mine"}\n', encoding="utf-8")  # an input kept beside
    _run(tmp_path, settings={"seed": 1, "model": "a", "n": 5})
    with pytest.raises(SettingsMismatch, match=r"other settings \(model, n\).*--overwrite"):
        RunFolder(tmp_path, {"seed": 1, "model": "b", "n": 4})
    assert (tmp_path / "records.jsonl").is_file()  # the refused rerun left the earlier output intact
    RunFolder(tmp_path, {"seed": 1, "model": "b", "n": 4}, RunOptions(overwrite=True))
    assert not (tmp_path / "records.jsonl").exists() and not (tmp_path / "done.json").exists()
    assert (tmp_path / "predictions.jsonl").read_text() == '{"id": "mine"}\n'  # only the job's own files go
    assert json.loads((tmp_path / "settings.json").read_text())["model"] == "b"
    RunFolder(tmp_path, {"seed": 1, "model": "b", "n": 4})  # the same settings again: resumed, not refused


def test_failed_items_are_retried_by_reruns_up_to_the_count(tmp_path: Path) -> None:
    tries: dict[str, int] = {}

    def flaky(batch: Sequence[str]) -> list[dict[str, Any]]:
        rows = []
        for item in batch:
            tries[item] = tries.get(item, 0) + 1
            broken = item == "item-003" or (item == "item-007" and tries[item] < 2)
            rows.append({"id": item, "error": "server down"} if broken else _make([item])[0])
        return rows

    def run() -> list[dict[str, Any]]:
        folder = RunFolder(tmp_path, {"seed": 1}, RunOptions(retries=2))
        return folder.run("records", ITEMS, lambda i: i, flaky, 4, False, failure=lambda r: r.get("error"))

    run()
    assert count_failures(tmp_path / "records.jsonl") == {"item-003": 1, "item-007": 1}
    second = run()
    assert tries["item-007"] == 2 and "error" not in second[7]  # retried and made
    assert tries["item-003"] == 2 and tries["item-000"] == 1  # the good ones are not made again
    run()
    run()
    assert tries["item-003"] == 3  # one first try plus two retries, then it stays failed
    assert run()[3]["error"] == "server down"
    one_go = tmp_path / "one-go"
    RunFolder(one_go, {"seed": 1}).run("records", ITEMS, lambda i: i, _make, 4, False)
    assert [r for r in read_jsonl(tmp_path / "records.jsonl") if r["id"] != "item-003"] == [
        r for r in read_jsonl(one_go / "records.jsonl") if r["id"] != "item-003"
    ]


def test_shards_merge_byte_identical_to_one_run(tmp_path: Path) -> None:
    _run(tmp_path / "one")
    sharded = tmp_path / "sharded"
    for index in (2, 0, 1):
        part = _run(sharded, RunOptions(num_shards=3, shard_index=index))
        assert [r["id"] for r in part] == ITEMS[index::3]
    assert not (sharded / "records.jsonl").exists()
    assert sorted(p.name for p in sharded.glob("done*.json")) == [
        f"done.shard-0000{k}-of-00003.json" for k in range(3)
    ]
    _run(sharded)  # without shards: takes the shards' records, makes nothing
    assert (sharded / "records.jsonl").read_bytes() == (tmp_path / "one" / "records.jsonl").read_bytes()
    assert sorted(p.name for p in sharded.iterdir()) == [
        "done.json",
        "record_files.json",
        "records.jsonl",
        "settings.json",
    ]


def test_bad_run_options() -> None:
    for kwargs, message in [
        ({"num_shards": 0}, "num-shards"),
        ({"num_shards": 2, "shard_index": 2}, r"shard-index must be in \[0, 2\)"),
        ({"retries": -1}, "retries"),
    ]:
        with pytest.raises(ValueError, match=message):
            RunOptions(**kwargs)


def test_content_hash_follows_the_bytes_not_the_path(tmp_path: Path) -> None:
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_model.safetensors").write_bytes(b"weights-1")
    first = content_hash(adapter)
    assert first == content_hash(str(adapter)) and first is not None and first.startswith("sha256:")
    (adapter / "adapter_model.safetensors").write_bytes(b"weights-2")
    assert content_hash(adapter) != first
    assert content_hash("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert content_hash(None) is None


_WORKER = """
import sys, time
from kt_train.stages import RunFolder

items = [f"item-{i:03d}" for i in range(int(sys.argv[2]))]

def make(batch):
    time.sleep(0.03)
    return [{"id": i, "value": sum(map(ord, i)) ** 2, "text": i * 50} for i in batch]

folder = RunFolder(sys.argv[1], {"seed": 1})
folder.run("records", items, lambda i: i, make, 3, False)
folder.finish()
"""


def test_kill_9_at_random_points_then_resume_gives_the_same_bytes(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(_WORKER, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))

    def start(output: Path) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, str(script), str(output), "120"], env=env)

    reference = tmp_path / "one-go"
    assert start(reference).wait(timeout=120) == 0
    resumed = tmp_path / "killed"
    rng = random.Random(7)
    kills = 0
    while not (resumed / "done.json").exists():
        process = start(resumed)
        time.sleep(rng.uniform(0.2, 1.0))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait(timeout=120)
        assert kills < 50
    assert kills >= 2
    assert (resumed / "records.jsonl").read_bytes() == (reference / "records.jsonl").read_bytes()
    ids = [r["id"] for r in read_jsonl(resumed / "records.jsonl")]
    assert ids == [f"item-{i:03d}" for i in range(120)]  # nothing lost, nothing doubled


def test_shard_files_copied_together_from_several_hosts_are_merged(tmp_path: Path) -> None:
    one = tmp_path / "one"
    RunFolder(one, {"seed": 1}).run("part/records", ITEMS, lambda i: i, _make, 4, False)
    merged = tmp_path / "merged"
    for index in range(2):  # each host its own folder; only the shard record files are copied
        host = tmp_path / f"host-{index}"
        folder = RunFolder(host, {"seed": 1}, RunOptions(num_shards=2, shard_index=index))
        folder.run("part/records", ITEMS, lambda i: i, _make, 4, False)
        for path in host.rglob("*.shard-*.jsonl"):
            target = merged / path.relative_to(host)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())

    def refuse(batch: Sequence[str]) -> list[dict[str, Any]]:
        raise AssertionError(f"made again: {batch}")

    RunFolder(merged, {"seed": 1}).run("part/records", ITEMS, lambda i: i, refuse, 4, False)
    assert (merged / "part" / "records.jsonl").read_bytes() == (one / "part" / "records.jsonl").read_bytes()
