"""The expression suite of the NL round trip (NL paper §2.1, §3.1, App. B): skeleton cells over (k, d).

For every cell ``k in [k_min, k_max]``, ``d in [d_min, d_max]`` all skeletons are enumerated; a cell with more than
``max_skeletons`` is subsampled uniformly with a seed derived from (domain, seed, k, d), keeping enumeration order.
Each used skeleton gets ``instances`` distinct instantiations, instance ``j`` drawn from an RNG seeded by hashing
(domain, seed, skeleton id, j). With the defaults the arithmetic suite has 490 skeletons and 2,450 expressions, as in
the paper. ``kt nl suite --output DIR`` builds and writes the default suite.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dsl.expr.domains import DOMAIN_NAMES, Domain, get_domain
from dsl.expr.features import structural_features
from dsl.expr.prompts import shot_expressions
from dsl.expr.serialize import parse_infix, to_infix, to_json_ast, to_sexpr
from dsl.expr.skeletons import count_skeletons, enumerate_skeletons, skeleton_id
from kt_train.options import command_line

logger = logging.getLogger(__name__)

SUITE_PARQUET = "data/train-00000-of-00001.parquet"
LEGACY_SUITE_PARQUET = "suite.parquet"
"""Where suites written before the dataset layout kept their rows; still read."""
SUITE_JSON = "suite.json"
CELLS_MD = "cells.md"
BASE_COLUMNS = (
    "id",
    "domain",
    "k",
    "d",
    "skeleton",
    "skeleton_index",
    "instance",
    "infix",
    "sexpr",
    "json_ast",
    "variables",
)
MAX_DUPLICATE_REDRAWS = 100


@dataclass
class SuiteConfig:
    """Cells, caps and seed of an expression suite."""

    domain: str = field(default="arithmetic", metadata={"help": "expression domain", "choices": list(DOMAIN_NAMES)})
    k_min: int = field(default=2, metadata={"help": "smallest operator count"})
    k_max: int = field(default=8, metadata={"help": "largest operator count"})
    d_min: int = field(default=2, metadata={"help": "smallest depth"})
    d_max: int = field(default=6, metadata={"help": "largest depth"})
    max_skeletons: int = field(default=50, metadata={"help": "skeletons kept per (k, d) cell (uniform subsample)"})
    instances: int = field(default=5, metadata={"help": "instantiations per skeleton"})
    seed: int = field(default=0, metadata={"help": "seed of subsampling and instantiation"})

    def __post_init__(self) -> None:
        if self.domain not in DOMAIN_NAMES:
            raise ValueError(f"domain must be one of {', '.join(DOMAIN_NAMES)}, got {self.domain!r}")
        if self.k_min < 1:
            raise ValueError(f"k_min must be >= 1, got {self.k_min}")
        if self.k_max < self.k_min:
            raise ValueError(f"k_max must be >= k_min, got {self.k_max} < {self.k_min}")
        if self.d_min < 1:
            raise ValueError(f"d_min must be >= 1, got {self.d_min}")
        if self.d_max < self.d_min:
            raise ValueError(f"d_max must be >= d_min, got {self.d_max} < {self.d_min}")
        if self.max_skeletons < 1:
            raise ValueError(f"max_skeletons must be >= 1, got {self.max_skeletons}")
        if self.instances < 1:
            raise ValueError(f"instances must be >= 1, got {self.instances}")


@dataclass
class Suite:
    """Rows (one per expression) and cells (one per (k, d) pair) of a built suite."""

    config: SuiteConfig
    rows: list[dict[str, Any]]
    cells: list[dict[str, Any]]

    @property
    def n_expressions(self) -> int:
        return len(self.rows)

    @property
    def infeasible_cells(self) -> list[tuple[int, int]]:
        return [(cell["k"], cell["d"]) for cell in self.cells if not cell["feasible"]]

    def fingerprint(self) -> str:
        return rows_fingerprint(self.rows)


def derive_seed(*parts: object) -> int:
    """A 64-bit seed from the sha256 of the parts (stable across runs and platforms)."""
    digest = hashlib.sha256("\x1f".join(str(part) for part in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def hashed_rng(*parts: object) -> random.Random:
    """An RNG of its own for one item, seeded by hashing `parts` (any item can be drawn alone, in any order)."""
    return random.Random(derive_seed(*parts))


def rows_fingerprint(rows: list[dict[str, Any]]) -> str:
    """sha256 of the rows as canonical JSON."""
    text = json.dumps(rows, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _used_indices(n: int, config: SuiteConfig, k: int, d: int) -> list[int]:
    if n <= config.max_skeletons:
        return list(range(n))
    rng = random.Random(derive_seed(config.domain, config.seed, k, d))
    return sorted(rng.sample(range(n), config.max_skeletons))


def _instances(domain: Domain, config: SuiteConfig, skeleton_key: str, skeleton: Any) -> list[Any]:
    """``config.instances`` distinct expressions; a duplicate is redrawn with the next derived seed (bounded)."""
    expressions: list[Any] = []
    seen: set[str] = set()
    for j in range(config.instances):
        for attempt in range(MAX_DUPLICATE_REDRAWS):
            parts: tuple[object, ...] = (domain.name, config.seed, skeleton_key, j)
            rng = random.Random(derive_seed(*parts, attempt) if attempt else derive_seed(*parts))
            node = domain.instantiate(skeleton, rng)
            key = to_sexpr(node)
            if key not in seen:
                seen.add(key)
                expressions.append(node)
                break
        else:
            raise ValueError(
                f"skeleton {skeleton_key} gave only duplicates for instance {j} after {MAX_DUPLICATE_REDRAWS} draws"
            )
    return expressions


def build_suite(config: SuiteConfig | None = None, progress: bool = False) -> Suite:
    """Enumerate, subsample and instantiate every (k, d) cell of the config."""
    config = config or SuiteConfig()
    domain = get_domain(config.domain)
    pairs = [(k, d) for k in range(config.k_min, config.k_max + 1) for d in range(config.d_min, config.d_max + 1)]
    iterator: Any = pairs
    if progress:
        from tqdm import tqdm

        iterator = tqdm(pairs, desc=f"{config.domain} suite", unit="cell")
    rows: list[dict[str, Any]] = []
    cells: list[dict[str, Any]] = []
    for k, d in iterator:
        n_all = count_skeletons(k, d)
        skeletons = enumerate_skeletons(k, d)
        used = _used_indices(len(skeletons), config, k, d)
        n_rows_before = len(rows)
        for index in used:
            skeleton = skeletons[index]
            key = skeleton_id(skeleton)
            for j, node in enumerate(_instances(domain, config, key, skeleton)):
                row: dict[str, Any] = {
                    "id": f"{config.domain}-k{k}-d{d}-s{index:03d}-i{j}",
                    "domain": config.domain,
                    "k": k,
                    "d": d,
                    "skeleton": key,
                    "skeleton_index": index,
                    "instance": j,
                    "infix": to_infix(node, domain.syntax),
                    "sexpr": to_sexpr(node),
                    "json_ast": to_json_ast(node),
                    "variables": sorted(set(node.variables())),
                }
                features = structural_features(node, domain.operators, domain.non_commutative)
                row.update({name: value for name, value in features.items() if name not in ("k", "d")})
                rows.append(row)
        cells.append(
            {
                "k": k,
                "d": d,
                "n_skeletons": n_all,
                "n_used": len(used),
                "n_expressions": len(rows) - n_rows_before,
                "feasible": n_all > 0,
            }
        )
    return Suite(config=config, rows=rows, cells=cells)


def suite_report(suite: Suite) -> str:
    """A short human-readable summary: totals and infeasible cells."""
    n_skeletons = sum(cell["n_used"] for cell in suite.cells)
    infeasible = ", ".join(f"({k},{d})" for k, d in suite.infeasible_cells) or "none"
    return (
        f"{suite.config.domain} suite: {suite.n_expressions} expressions from {n_skeletons} skeletons "
        f"in {len(suite.cells) - len(suite.infeasible_cells)} feasible (k, d) cells; infeasible: {infeasible}"
    )


def cells_markdown(suite: Suite) -> str:
    """Markdown table, k rows by d columns: skeletons used / existing ('-' for an infeasible cell)."""
    ds = sorted({cell["d"] for cell in suite.cells})
    ks = sorted({cell["k"] for cell in suite.cells})
    by_pair = {(cell["k"], cell["d"]): cell for cell in suite.cells}
    lines = [
        f"Skeletons used / existing per (k, d) cell; expressions = used x {suite.config.instances}.",
        "",
        "| k \\ d | " + " | ".join(str(d) for d in ds) + " |",
        "|---" * (len(ds) + 1) + "|",
    ]
    for k in ks:
        entries = []
        for d in ds:
            cell = by_pair[(k, d)]
            entries.append(f"{cell['n_used']}/{cell['n_skeletons']}" if cell["feasible"] else "-")
        lines.append(f"| {k} | " + " | ".join(entries) + " |")
    lines += ["", f"Total: {suite.n_expressions} expressions."]
    return "\n".join(lines) + "\n"


def _write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_suite(suite: Suite, output_dir: str | os.PathLike[str], command: str | None = None) -> Path:
    """Write the rows as a dataset (``kt_train.hf_dataset``: ``data/`` and its card), ``suite.json`` (config,
    totals, cells, fingerprint: :func:`load_suite` checks the rows against it) and ``cells.md``."""
    import pyarrow as pa

    from kt_train.hf_dataset import CardInfo, write_hf_dataset

    out = Path(output_dir)
    description = f"""The expression suite of the NL round trip (paper 002, §2.1, §3.1, App. B) made by `kt nl suite`:
{suite.config.domain} expressions over skeleton cells (k operators, depth d), `instances` instantiations of each used
skeleton. Columns: `id` (`<domain>-k<k>-d<d>-s<skeleton>-i<instance>`), the cell, the skeleton, the expression as
infix, S-expression and JSON AST, its variables and structural features. Run the round trip on it with `kt nl run`.

{cells_markdown(suite)}"""
    info = CardInfo(
        pretty_name=f"NL round trip expression suite: {suite.config.domain}",
        description=description,
        command=command,
        language=("en",),
        tags=("nl-round-trip", "expressions"),
    )
    write_hf_dataset(out, {"train": pa.Table.from_pylist(suite.rows)}, info)
    meta = {
        "config": asdict(suite.config),
        "command": command,
        "n_expressions": suite.n_expressions,
        "n_skeletons": sum(cell["n_used"] for cell in suite.cells),
        "cells": suite.cells,
        "infeasible_cells": [list(pair) for pair in suite.infeasible_cells],
        "fingerprint": suite.fingerprint(),
    }
    _write_text_atomic(out / SUITE_JSON, json.dumps(meta, indent=2) + "\n")
    _write_text_atomic(out / CELLS_MD, cells_markdown(suite))
    return out


def make_suite(config: SuiteConfig, output_dir: str | os.PathLike[str], progress: bool = False) -> Suite:
    """`kt nl suite` as a call: the suite of `config` built and written with the command that rebuilds it."""
    suite = build_suite(config, progress=progress)
    write_suite(suite, output_dir, command=command_line("kt nl suite", config) + " --output OUT")
    return suite


def suite_rows_file(directory: str | os.PathLike[str]) -> Path | None:
    """The rows file of a suite folder (the dataset layout, else the layout of older versions), None when neither."""
    found = [Path(directory) / name for name in (SUITE_PARQUET, LEGACY_SUITE_PARQUET)]
    return next((path for path in found if path.is_file()), None)


def load_suite(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a suite written by :func:`write_suite`, checked against the fingerprint in ``suite.json``."""
    import pyarrow.parquet as pq

    path = Path(directory)
    if not path.is_dir():
        raise FileNotFoundError(f"suite directory {path} does not exist (build it with `kt nl suite --output DIR`)")
    parquet_path = suite_rows_file(path)
    if parquet_path is None:
        raise FileNotFoundError(f"{path / SUITE_PARQUET} is missing: {path} is not a suite directory")
    try:
        rows = pq.read_table(parquet_path).to_pylist()
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise ValueError(f"{parquet_path} is not a readable parquet file: {exc}") from exc
    missing = [column for column in BASE_COLUMNS if rows and column not in rows[0]]
    if not rows or missing:
        raise ValueError(f"{parquet_path} is not a suite (rows: {len(rows)}, missing columns: {missing})")
    meta_path = path / SUITE_JSON
    if meta_path.is_file():
        try:
            expected = json.loads(meta_path.read_text(encoding="utf-8"))["fingerprint"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{meta_path} is broken: {exc}") from exc
        if rows_fingerprint(rows) != expected:
            raise ValueError(f"{parquet_path} does not match the fingerprint in {meta_path}; rebuild the suite")
    return rows


def exclude_expressions(rows: list[dict[str, Any]], sexprs: set[str] | frozenset[str]) -> list[dict[str, Any]]:
    """Rows whose ``sexpr`` is not in ``sexprs`` (e.g. to keep shot exemplars out of evaluation)."""
    return [row for row in rows if row["sexpr"] not in sexprs]


def without_shots(rows: list[dict[str, Any]], domain: str) -> list[dict[str, Any]]:
    """The suite without any expression used as a prompt exemplar (the shot pool is disjoint from evaluation)."""
    syntax = get_domain(domain).syntax
    shots = {to_sexpr(parse_infix(text, syntax)) for text in shot_expressions(domain)}
    kept = exclude_expressions(list(rows), shots)
    if len(kept) < len(rows):
        logger.warning("dropped %d suite expressions equal to a prompt exemplar", len(rows) - len(kept))
    return kept


__all__ = [
    "BASE_COLUMNS",
    "Suite",
    "SuiteConfig",
    "build_suite",
    "cells_markdown",
    "derive_seed",
    "exclude_expressions",
    "hashed_rng",
    "load_suite",
    "rows_fingerprint",
    "suite_report",
    "suite_rows_file",
    "without_shots",
    "write_suite",
]
