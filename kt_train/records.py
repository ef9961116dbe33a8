"""JSONL record files of every long job: tolerant reading (a torn last line is skipped), atomic rewriting, and the
resumable batch runner (failed records retried on later runs, shard files absorbed)."""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tqdm.auto import tqdm

logger = logging.getLogger(__name__)
T = TypeVar("T")
FailureReason = Callable[[Mapping[str, Any]], "str | None"]


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


def json_line(record: Mapping[str, Any]) -> str:
    """One JSONL line: UTF-8 text as is, or ASCII escapes where the record holds text UTF-8 cannot encode (a lone
    surrogate such as "\\udcff" in a model's completion), which read back to the same string."""
    line = json.dumps(record, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(record)
    return line + "\n"


def write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Replace `path` atomically by `records`, one JSON object a line."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json_line(record))
    os.replace(tmp, path)


def timings_path(path: Path) -> Path:
    """The log beside `path` of how long each batch took (a log, like the failures file: not byte-stable)."""
    return path.with_name(path.name.removesuffix(".jsonl") + ".timings.jsonl")


def log_timing(path: Path, items: int, seconds_per_item: float) -> None:
    """Append one batch's timing to the log of `path` (records hold no timing: same seed, same bytes)."""
    with timings_path(path).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"items": items, "seconds_per_item": round(seconds_per_item, 4)}) + "\n")


def failures_path(path: Path) -> Path:
    """The side file of `path` that counts the failed attempts of each id (one line per failure)."""
    return path.with_name(path.name.removesuffix(".jsonl") + ".failures.jsonl")


def run_resumable(
    path: Path,
    items: Sequence[T],
    key: Callable[[T], str],
    process: Callable[[Sequence[T]], Iterable[dict[str, Any]]],
    batch_size: int,
    progress: bool,
    desc: str,
    *,
    failure: FailureReason | None = None,
    retries: int = 2,
) -> list[dict[str, Any]]:
    """Records of `items` (by `key`) in `path`, making the missing ones with `process`, batch by batch.

    Records already in `path` are reused; new ones are appended and flushed after each batch, so a killed run loses
    at most one batch. A record for which `failure` gives a reason (a generation error, a sandbox timeout) is made
    again by later runs until it has failed `retries + 1` times; the failures are counted in a side file
    (`failures_path`), never in the records, so a run that needed retries ends with the same bytes as one that did
    not. At the end `path` is rewritten with the items' records in item order, then any other records it held
    (sorted by id), so a resumed run ends byte-identical to one made in one go.
    """
    done = {record["id"]: record for record in read_jsonl(path)}
    failed_attempts = read_jsonl(failures_path(path))
    attempts = Counter(record["id"] for record in failed_attempts)
    write_jsonl(path, done.values())  # drops a torn last line before appending
    if failed_attempts:
        write_jsonl(failures_path(path), failed_attempts)

    def wanted(item: T) -> bool:
        record = done.get(key(item))
        if record is None:
            return True
        return failure is not None and failure(record) is not None and attempts[key(item)] <= retries

    todo = [item for item in items if wanted(item)]
    if todo:
        bar = tqdm(total=len(items), initial=len(items) - len(todo), desc=desc, unit="record", disable=not progress)
        with bar, path.open("a", encoding="utf-8") as handle, failures_path(path).open("a", encoding="utf-8") as fail:
            for start in range(0, len(todo), batch_size):
                batch = todo[start : start + batch_size]
                for record in process(batch):
                    done[record["id"]] = record
                    handle.write(json_line(record))
                    reason = failure(record) if failure is not None else None
                    if reason is not None:
                        attempts[record["id"]] += 1
                        fail.write(json.dumps({"id": record["id"], "reason": reason}) + "\n")
                handle.flush()
                fail.flush()
                bar.update(len(batch))
    records = [done.pop(key(item)) for item in items]
    write_jsonl(path, [*records, *(done[k] for k in sorted(done))])
    if failure is not None:
        failed = [r["id"] for r in records if failure(r) is not None]
        if failed:
            logger.warning(
                "%s: %d of %d records failed (e.g. %s); a rerun retries those tried at most %d times",
                desc,
                len(failed),
                len(records),
                failed[0],
                retries + 1,
            )
    if not attempts:
        failures_path(path).unlink(missing_ok=True)
    return records


def merge_jsonl(path: Path, sources: Sequence[Path]) -> None:
    """Add the records of `sources` (shard files of `path`) to `path`, each id once (those of `path` first), and
    their failure counts to `path`'s; then delete the sources. Idempotent, so a merge killed midway is redone."""
    records = {record["id"]: record for source in (*sources, path) for record in read_jsonl(source)}
    failures = [record for source in (path, *sources) for record in read_jsonl(failures_path(source))]
    write_jsonl(path, records.values())
    if failures:
        write_jsonl(failures_path(path), failures)
    for source in sources:
        failures_path(source).unlink(missing_ok=True)
        source.unlink()


def count_failures(path: Path) -> Counter[str]:
    """Failed attempts per id recorded beside `path`."""
    return Counter(record["id"] for record in read_jsonl(failures_path(path)))


__all__ = ["count_failures", "failures_path", "json_line", "merge_jsonl", "read_jsonl", "run_resumable", "write_jsonl"]
