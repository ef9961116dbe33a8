"""The paper's released benchmark inputs (Nickil21/round-trip-code-compression, `data/processed/<alg>/data.json`).

`release_inputs(DIR)` reads the four data.json of a checkout of the public repository (or a folder holding
`<alg>/data.json`, or the four files side by side as `<alg>.json`), checks that they list the same inputs in the same
order, and returns them as benchmark inputs with the release's families and categories. `check_release_outputs`
reports where our encoders do not reproduce the release's recorded outputs (they agree on all 250 inputs of each
algorithm; a mismatch means another release or a changed encoder).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracegen.inputs import InputItem

RELEASE_ALGORITHMS = ("lzw", "ae", "rle", "huffman")  # the release's data folders (ours may be more)
FAMILY_PREFIXES = (("string_dna_", "dna"), ("string_", "string"), ("log_", "log"), ("yaml_", "yaml"))
FAMILY_PREFIXES += (("tabular_", "tabular"),)


def release_family(category: str) -> str:
    """The release's family of a category name (`string_dna_*` is the DNA family)."""
    for prefix, family in FAMILY_PREFIXES:
        if category.startswith(prefix):
            return family
    raise ValueError(f"release category {category!r} belongs to no known family")


def data_file(release_dir: Path, algorithm: str) -> Path:
    """Where `algorithm`'s data.json lies under `release_dir` (the first of the supported layouts that exists)."""
    candidates = (
        release_dir / "data" / "processed" / algorithm / "data.json",
        release_dir / algorithm / "data.json",
        release_dir / f"{algorithm}.json",
    )
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"no {algorithm} data.json under {release_dir} (looked for data/processed/{algorithm}/data.json, "
        f"{algorithm}/data.json, {algorithm}.json)"
    )


def read_release_file(release_dir: Path | str, algorithm: str) -> dict[str, Any]:
    """`algorithm`'s data.json: the item (problem description, algorithm, ...) with its checked `ios` list."""
    release_dir = Path(release_dir)
    if not release_dir.is_dir():
        raise FileNotFoundError(f"release folder {release_dir} does not exist")
    path = data_file(release_dir, algorithm)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("ios"), list):
        raise ValueError(f"{path}: expected an object with an `ios` list")
    for index, row in enumerate(data["ios"]):
        if not (isinstance(row, dict) and isinstance(row.get("input"), str) and "output" in row):
            raise ValueError(f"{path}: ios[{index}] needs a string `input` and an `output`")
        if not isinstance(row.get("category"), str):
            raise ValueError(f"{path}: ios[{index}] needs a string `category`")
    return data


def read_release(release_dir: Path | str) -> dict[str, list[dict[str, Any]]]:
    """The `ios` list of each algorithm's data.json."""
    return {algorithm: read_release_file(release_dir, algorithm)["ios"] for algorithm in RELEASE_ALGORITHMS}


def release_inputs(release_dir: Path | str) -> list[InputItem]:
    """The release's inputs in its order (ids `release-0000`...), the same for all four algorithms."""
    ios = read_release(release_dir)
    reference = ios[RELEASE_ALGORITHMS[0]]
    for algorithm, rows in ios.items():
        pairs = [(r["input"], r["category"]) for r in rows]
        if pairs != [(r["input"], r["category"]) for r in reference]:
            first = next((i for i, (a, b) in enumerate(zip(rows, reference)) if a["input"] != b["input"]), None)
            raise ValueError(
                f"{algorithm} data.json lists other inputs than {RELEASE_ALGORITHMS[0]} "
                f"({len(rows)} vs {len(reference)} rows; first difference at {first})"
            )
    return [
        InputItem(f"release-{index:04d}", release_family(row["category"]), row["category"], row["input"])
        for index, row in enumerate(reference)
    ]


def recorded_output(algorithm: Any, text: str) -> Any:
    """What the release's data.json records for `text`: our encoder's z as JSON; of Huffman's `triple` target the
    bytes only (the `bytes` target's z is the bytes already)."""
    z = algorithm.to_json(algorithm.encode(text))
    return z[0] if algorithm.name == "huffman" and not getattr(algorithm, "variant", "") else z


def check_release_outputs(release_dir: Path | str, algorithms: dict[str, Any]) -> dict[str, list[int]]:
    """Per algorithm, the indices whose recorded output our encoder does not reproduce (`recorded_output`)."""
    mismatches: dict[str, list[int]] = {}
    for name, rows in read_release(release_dir).items():
        if name in algorithms:
            algorithm = algorithms[name]
            mismatches[name] = [
                index for index, row in enumerate(rows) if recorded_output(algorithm, row["input"]) != row["output"]
            ]
    return mismatches


__all__ = [
    "RELEASE_ALGORITHMS",
    "check_release_outputs",
    "read_release",
    "read_release_file",
    "recorded_output",
    "release_family",
    "release_inputs",
]
