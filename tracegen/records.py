"""JSONL record files of the trace pipeline: tolerant reading (a torn last line is skipped) and atomic rewriting."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


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
