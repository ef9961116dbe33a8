"""Read a KT evaluation set: the synthetic set of `kt dsl eval-set` or a natural-data set of `kt kt-data`.

Both are folders of Parquet files under `data/` with `id` and `sequence` columns; the synthetic set also has the gold
`program`, and a natural set has a `kt_data.json` manifest naming its modality and bits per symbol (3 for DNA).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

NATURAL_MANIFEST = "kt_data.json"
SYNTHETIC_MANIFEST = "generation.json"


@dataclass(frozen=True)
class KTItem:
    """One sequence to compress, with its gold program when it has one."""

    id: str
    sequence: tuple[int, ...]
    program: str | None = None


@dataclass(frozen=True)
class KTDataset:
    """The items of an evaluation set and how to count their raw size."""

    path: Path
    modality: str
    symbol_bits: int
    items: tuple[KTItem, ...]
    fingerprint: str

    @property
    def natural(self) -> bool:
        """Natural data (no gold programs): program outputs are taken mod 256, as the official evaluation does."""
        return self.modality != "synthetic"


class DatasetError(ValueError):
    """A folder that is not a KT evaluation set."""


def load_kt_dataset(path: Path | str, limit: int | None = None) -> KTDataset:
    """The first `limit` items (all for None) of the set at `path`, in file order."""
    root = Path(path)
    files = sorted((root / "data").glob("*.parquet"))
    if not files:
        raise DatasetError(f"{root} is not a KT evaluation set: no data/*.parquet (make one with `kt dsl eval-set`)")
    natural = root / NATURAL_MANIFEST
    if natural.is_file():
        manifest = json.loads(natural.read_text(encoding="utf-8"))
        modality, symbol_bits = str(manifest["modality"]), int(manifest["symbol_bits"])
    else:
        modality, symbol_bits = "synthetic", 8
    items: list[KTItem] = []
    digest = hashlib.sha256()
    for file in files:
        try:
            table = pq.read_table(file)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            reason = "".join(c if c.isprintable() else " " for c in " ".join(str(exc).split()))
            raise DatasetError(f"{file} is not a readable Parquet file: {reason}") from exc
        if not {"id", "sequence"} <= set(table.column_names):
            raise DatasetError(f"{file} lacks the columns id and sequence")
        programs = table.column("program").to_pylist() if "program" in table.column_names else None
        for i, (item_id, sequence) in enumerate(
            zip(table.column("id").to_pylist(), table.column("sequence").to_pylist(), strict=True)
        ):
            if limit is not None and len(items) >= limit:
                break
            if not sequence:
                raise DatasetError(f"{file}: item {item_id} has an empty sequence")
            if not isinstance(sequence, list) or not all(type(v) is int for v in sequence):
                shown = repr(sequence)[:60]
                raise DatasetError(f"{file}: item {item_id}: `sequence` must be a list of integers, not {shown}")
            item = KTItem(str(item_id), tuple(sequence), programs[i] if programs is not None else None)
            digest.update(f"{item.id}:{','.join(map(str, item.sequence))}\n".encode())
            items.append(item)
    return KTDataset(root, modality, symbol_bits, tuple(items), digest.hexdigest()[:16])


__all__ = ["NATURAL_MANIFEST", "DatasetError", "KTDataset", "KTItem", "load_kt_dataset"]
