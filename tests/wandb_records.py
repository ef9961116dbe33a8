"""The records of an offline W&B run (`run-*.wandb`), read with wandb's own protobuf schema.

wandb 0.31 keeps no Python reader of its transaction log (wandb-core writes it), so this reads the container: a
7-byte file header (`:W&B`, magic, version), then 32 KiB blocks of chunks, each a 7-byte header (CRC32, length,
type: full, first, middle, last) before its bytes, as in LevelDB's log format.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BLOCK = 32768
HEADER = struct.Struct("<IHB")
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def payloads(path: Path) -> Iterator[bytes]:
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B transaction log"
    offset, pending = 7, b""
    while offset + HEADER.size <= len(data):
        room = BLOCK - offset % BLOCK
        if room < HEADER.size:  # the rest of a block too small for a header is padding
            offset += room
            continue
        _, length, kind = HEADER.unpack_from(data, offset)
        if kind == 0 and length == 0:
            offset += room
            continue
        chunk = data[offset + HEADER.size : offset + HEADER.size + length]
        offset += HEADER.size + length
        if kind == FULL:
            yield chunk
        elif kind == FIRST:
            pending = chunk
        elif kind == MIDDLE:
            pending += chunk
        elif kind == LAST:
            yield pending + chunk


def _items(updates: Any) -> dict[str, Any]:
    return {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in updates}


def run_records(run_dir: Path) -> dict[str, Any]:
    """What an offline run logged: `history` (one dict per `log` call, values decoded from JSON), `summary` and
    `config` (their last values), `run` (its id, project, group, job type and name)."""
    from wandb.proto import wandb_internal_pb2

    logged: dict[str, Any] = {"history": [], "summary": {}, "config": {}, "run": {}}
    for path in sorted(run_dir.glob("*.wandb")):
        for payload in payloads(path):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(payload)
            kind = record.WhichOneof("record_type")
            if kind == "history":
                logged["history"].append(_items(record.history.item))
            elif kind == "summary":
                logged["summary"] |= _items(record.summary.update)
            elif kind == "config":
                logged["config"] |= _items(record.config.update)
            elif kind == "run":
                logged["config"] |= _items(record.run.config.update)
                run = record.run
                logged["run"] = {
                    "id": run.run_id,
                    "project": run.project,
                    "group": run.run_group,
                    "job_type": run.job_type,
                    "name": run.display_name,
                }
    return logged
