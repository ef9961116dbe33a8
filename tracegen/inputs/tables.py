"""CSV/TSV tables of 5 columns by 5 rows: 10 categories varying value type, sparsity, header and delimiter."""

from __future__ import annotations

import random
import string
from collections.abc import Callable

Generated = tuple[str, dict]

SIZE = 5
COLUMN_NAMES = ("id", "name", "price", "qty", "city", "score", "date", "code", "status", "level", "owner", "tag")
WORDS = ("red", "blue", "oak", "pine", "alpha", "beta", "north", "south", "lima", "oslo")


def _numeric(rng: random.Random) -> str:
    return str(rng.randint(0, 1000))


def _alphanumeric(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_uppercase + string.digits, k=5))


def _mixed(rng: random.Random) -> str:
    kind = rng.randrange(5)
    if kind == 0:
        return str(rng.randint(-50, 500))
    if kind == 1:
        return f"{rng.uniform(0, 100):.2f}"
    if kind == 2:
        return rng.choice(("TRUE", "FALSE", "NULL"))
    if kind == 3:
        return f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return rng.choice(WORDS)


def _sparse(rng: random.Random) -> str:
    return str(rng.randint(0, 100)) if rng.random() < 0.25 else ""


def _table(rng: random.Random, cell: Callable[[random.Random], str], sep: str, headers: int = 1) -> Generated:
    columns = rng.sample(COLUMN_NAMES, SIZE)
    rows = [sep.join(columns)] * headers
    rows += [sep.join(cell(rng) for _ in range(SIZE)) for _ in range(SIZE)]
    return "\n".join(rows), {"delimiter": sep, "columns": columns, "header_rows": headers}


def _category(
    cell: Callable[[random.Random], str], sep: str, headers: int = 1
) -> Callable[[random.Random], Generated]:
    def generate(rng: random.Random) -> Generated:
        return _table(rng, cell, sep, headers)

    return generate


GENERATORS: dict[str, Callable[[random.Random], Generated]] = {
    "csv_numeric": _category(_numeric, ","),
    "csv_alphanumeric": _category(_alphanumeric, ","),
    "csv_mixed_types": _category(_mixed, ","),
    "csv_sparse": _category(_sparse, ","),
    "csv_repeated_header": _category(_numeric, ",", headers=2),
    "tsv_numeric": _category(_numeric, "\t"),
    "tsv_mixed_types": _category(_mixed, "\t"),
    "tsv_sparse": _category(_sparse, "\t"),
    "semicolon_delimited": _category(_mixed, ";"),
    "pipe_delimited": _category(_alphanumeric, "|"),
}
