"""The run contract of every long job: one output folder, the settings that determine its output, shards, retries.

A job (`kt traces collect`, `kt eval kt`, ...) opens its output folder as a `RunFolder` with the settings that decide
what it writes (model and adapter by content hash, sampling, data fingerprint, the step's code version):

- a folder holding a run with other settings is refused with one line naming the keys that differ, unless
  `--overwrite` is given (start afresh: the job's records, markers and settings are deleted first);
- its record files are resumable (`kt_train.records.run_resumable`): a rerun makes only what is missing, and records
  that failed (generation errors, sandbox timeouts) are made again, up to `--retries` more times, then reported;
- `--num-shards K --shard-index k` makes the run do only the items i with i % K == k, into files of its own
  (`<name>.shard-0000k-of-0000K.jsonl`); a later run without `--shard-index` in a folder holding the shards' files
  (one folder on a shared filesystem, or the shard files copied together) first merges them into its own files,
  makes what no shard made, and ends with the bytes of one unsharded run;
- `done.json` is written only when the whole run succeeded (`done.shard-...json` for a shard).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kt_train.records import FailureReason, failures_path, merge_jsonl, run_resumable

logger = logging.getLogger(__name__)
T = TypeVar("T")
SETTINGS_FILE = "settings.json"
SUMMARY_FILE = "summary.json"  # what a finished job reports (every job of the run contract writes one)
DONE_FILE = "done.json"
RECORDS_FILE = "record_files.json"
"""The names of the record files a run made in its folder (what `--overwrite` deletes)."""
_HASH_CHUNK = 1 << 20


class SettingsMismatch(ValueError):
    """The output folder holds a run made with other settings."""


@dataclass(frozen=True)
class RunOptions:
    """The options every long job takes (`kt ... --overwrite --retries N --num-shards K --shard-index k`)."""

    overwrite: bool = field(
        default=False, metadata={"help": "start afresh: delete this job's records in the output folder first"}
    )
    retries: int = field(
        default=2, metadata={"help": "times a failed item (generation error, sandbox timeout) is made again by reruns"}
    )
    num_shards: int = field(default=1, metadata={"help": "split the items into this many shards (a Slurm array)"})
    shard_index: int = field(
        default=0, metadata={"help": "the shard this run makes (items i with i % num_shards == shard_index)"}
    )

    def __post_init__(self) -> None:
        if self.num_shards < 1:
            raise ValueError(f"--num-shards must be >= 1, got {self.num_shards}")
        if not 0 <= self.shard_index < self.num_shards:
            raise ValueError(f"--shard-index must be in [0, {self.num_shards}), got {self.shard_index}")
        if self.retries < 0:
            raise ValueError(f"--retries must be >= 0, got {self.retries}")

    @property
    def sharded(self) -> bool:
        return self.num_shards > 1

    @property
    def suffix(self) -> str:
        """The part of a file name that names this shard ("" for an unsharded run)."""
        return f".shard-{self.shard_index:05d}-of-{self.num_shards:05d}" if self.sharded else ""


def content_hash(path: str | Path | None, patterns: Sequence[str] = ("**/*",)) -> str | None:
    """SHA-256 of a file, or of a folder's files matching `patterns` (names and bytes, in sorted order); None for
    None. A name that is not a local path (a hub id, the embedded model's name) is returned as it is: its content is
    pinned elsewhere."""
    if path is None:
        return None
    root = Path(path)
    if not root.exists():
        return str(path)
    digest = hashlib.sha256()
    files = [root] if root.is_file() else sorted({p for g in patterns for p in root.glob(g) if p.is_file()})
    for file in files:
        if file != root:
            digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        with file.open("rb") as handle:
            while chunk := handle.read(_HASH_CHUNK):
                digest.update(chunk)
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()


def adapter_hash(path: str | Path | None) -> str | None:
    """`content_hash` of a LoRA adapter: its `adapter_*` files only (it often shares its folder with the training's
    checkpoints, metrics and evaluations, which must not count)."""
    return content_hash(path, ("adapter_*",))


MODEL_FILES = ("*.safetensors", "*.bin", "*config.json", "tokenizer*", "*.model", "vocab.*", "merges.txt", "*.jinja")
"""The files of a model folder that decide what it generates (its weights, configs, tokenizer, chat template)."""


def model_hash(path: str | Path | None) -> str | None:
    """`content_hash` of a model folder's `MODEL_FILES` (not the metrics or evaluations a training left beside)."""
    return content_hash(path, MODEL_FILES)


def differing_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The keys whose values differ between two settings (missing counts as None)."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def _normalized(settings: Mapping[str, Any]) -> dict[str, Any]:
    """`settings` as they read back from JSON (tuples become lists), so a comparison sees no false difference."""
    return json.loads(json.dumps(dict(settings), sort_keys=True, default=str))


class RunFolder:
    """The output folder of one job run under the contract above."""

    def __init__(self, output: str | Path, settings: Mapping[str, Any], options: RunOptions | None = None) -> None:
        self.output = Path(output)
        self.options = options or RunOptions()
        self._names: list[str] | None = None
        self.settings = _normalized(settings)
        self.output.mkdir(parents=True, exist_ok=True)
        path = self.output / SETTINGS_FILE
        before = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        if before is not None and before != self.settings:
            if not self.options.overwrite:
                keys = ", ".join(differing_keys(before, self.settings))
                raise SettingsMismatch(
                    f"{self.output} holds a run with other settings ({keys}); pass --overwrite to start afresh "
                    "or use a new --output"
                )
            self._clear(everything=True)
        elif self.options.overwrite:
            self._clear(everything=not self.options.sharded)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.settings, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        if not self.options.sharded:
            self._take_over_shards()

    def _take_over_shards(self) -> None:
        """Merge every shard's record files into the unsharded ones (a run without shards then makes only what no
        shard made, and rewrites each file in item order: the bytes of one unsharded run)."""
        found = {
            p.relative_to(self.output).as_posix().split(".shard-")[0]
            for p in self.output.rglob("*.shard-*-of-*.jsonl")
            if not p.name.endswith(".failures.jsonl")
        }
        for name in sorted(found | set(self._recorded_names())):
            sources = sorted(p for p in self.output.glob(f"{name}.shard-*-of-*.jsonl") if ".failures." not in p.name)
            if sources:
                logger.info("taking over %d shard file(s) of %s in %s", len(sources), name, self.output)
                merge_jsonl(self.output / f"{name}.jsonl", sources)
        for marker in self.output.glob("done.shard-*-of-*.json"):
            marker.unlink()

    def _recorded_names(self) -> list[str]:
        """The record files this job made here (read from `record_files.json` once, then kept up to date)."""
        if self._names is None:
            path = self.output / RECORDS_FILE
            self._names = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
        return self._names

    def _clear(self, everything: bool) -> None:
        """Delete the record files and markers this job made (never other files of the folder): all of them, or
        only this shard's."""
        suffix = ".shard-*-of-*" if everything else self.options.suffix
        patterns = [
            f"{name}{s}{ext}"
            for name in self._recorded_names()
            for s in ("", suffix)
            for ext in (".jsonl", ".failures.jsonl", ".timings.jsonl")
            if everything or s
        ]
        patterns += ["done*.json", SETTINGS_FILE, RECORDS_FILE] if everything else [self._done.name]
        for pattern in patterns:
            for path in self.output.glob(pattern):
                path.unlink()
        logger.info("starting afresh in %s", self.output)

    @property
    def _done(self) -> Path:
        return self.output / f"done{self.options.suffix}.json"

    @property
    def done(self) -> bool:
        """Whether this run (this shard) finished."""
        return self._done.is_file()

    def path(self, name: str) -> Path:
        """The record file `name` (e.g. "traces", "generations/base") of this run or shard, noted as the job's."""
        if name not in self._recorded_names():
            self._names = sorted({*self._recorded_names(), name})
            manifest = self.output / RECORDS_FILE
            tmp = manifest.with_name(f"{manifest.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(self._names, indent=1) + "\n", encoding="utf-8")
            os.replace(tmp, manifest)
        path = self.output / f"{name}{self.options.suffix}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def shard(self, items: Sequence[T]) -> list[T]:
        """The items this run makes: all, or this shard's share."""
        k, n = self.options.shard_index, self.options.num_shards
        return [item for i, item in enumerate(items) if i % n == k]

    def run(
        self,
        name: str,
        items: Sequence[T],
        key: Callable[[T], str],
        process: Callable[[Sequence[T]], Iterable[dict[str, Any]]],
        batch_size: int,
        progress: bool,
        *,
        failure: FailureReason | None = None,
        shard: bool = True,
        desc: str | None = None,
    ) -> list[dict[str, Any]]:
        """The records of `items` in record file `name`, made where missing (`run_resumable`).

        `shard`: this call's items are the job's own list, split among shards (False: items derived from records
        this shard made, e.g. the round trips of its completions, all of which it makes)."""
        mine = self.shard(items) if shard else list(items)
        return run_resumable(
            self.path(name),
            mine,
            key,
            process,
            batch_size,
            progress,
            desc or name,
            failure=failure,
            retries=self.options.retries,
        )

    def finish(self, summary: Mapping[str, Any] | None = None) -> None:
        """Mark the run (or shard) finished."""
        tmp = self._done.with_name(self._done.name + ".tmp")
        tmp.write_text(json.dumps(dict(summary or {}), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self._done)


__all__ = [
    "DONE_FILE",
    "RECORDS_FILE",
    "SETTINGS_FILE",
    "SUMMARY_FILE",
    "RunFolder",
    "RunOptions",
    "SettingsMismatch",
    "adapter_hash",
    "content_hash",
    "differing_keys",
    "failures_path",
    "model_hash",
]
