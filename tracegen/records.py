"""JSONL record files of the trace pipeline: tolerant reading (a torn last line is skipped) and atomic rewriting."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records (JSON objects with an "id") of a JSONL file; unparsable lines, e.g. a torn last one, are skipped."""
    records: list[dict[str, Any]] = []
    if not path.exists():
        return records
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "id" in record:
            records.append(record)
    return records


def write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Replace `path` atomically by `records`, one JSON object a line."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def run_resumable(
    path: Path,
    items: Sequence[T],
    key: Callable[[T], str],
    process: Callable[[Sequence[T]], Iterable[dict[str, Any]]],
    batch_size: int,
    progress: bool,
    desc: str,
) -> list[dict[str, Any]]:
    """Records of `items` (by `key`) in `path`, making the missing ones with `process`, batch by batch.

    Records already in `path` are reused; new ones are appended and flushed after each batch, so a killed run loses at
    most one batch. At the end `path` is rewritten with the items' records in item order, then any other records it
    held (sorted by id), so a resumed run ends byte-identical to one made in one go.
    """
    done = {record["id"]: record for record in read_jsonl(path)}
    write_jsonl(path, done.values())  # drops a torn last line before appending
    todo = [item for item in items if key(item) not in done]
    if todo:
        bar = tqdm(total=len(items), initial=len(items) - len(todo), desc=desc, unit="record", disable=not progress)
        with bar, path.open("a", encoding="utf-8") as handle:
            for start in range(0, len(todo), batch_size):
                batch = todo[start : start + batch_size]
                for record in process(batch):
                    done[record["id"]] = record
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                handle.flush()
                bar.update(len(batch))
    records = [done.pop(key(item)) for item in items]
    write_jsonl(path, [*records, *(done[k] for k in sorted(done))])
    return records
