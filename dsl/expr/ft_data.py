"""Fine-tuning chats for the NL round trip (NL paper §4, App. O): procedural word problems in both directions.

Arithmetic FT uses the evaluation topologies (every skeleton with 2..8 operators at each depth, drawn uniformly) with
letters Q..Z and constants 11..20, disjoint from the evaluation suite's A..H and 1..10; assembly FT uses random
assembly trees of each depth. Each distinct expression gets a procedural word problem
(:mod:`dsl.expr.procedural`) and yields two chats: expression -> word problem (the generator prompt) and word
problem -> expression (the extractor prompt, answered ``Expression: ...``). Pairs are split train/test per depth by a
seeded hash, both chats of a pair on the same side; the folder is a dataset (``kt_train.hf_dataset``) that
``recipes/sft_nl.py`` and stock ``trl sft`` load.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from dsl.expr.arithmetic import ArithmeticConfig, instantiate
from dsl.expr.assembly import random_assembly
from dsl.expr.procedural import render_arithmetic, render_assembly
from dsl.expr.prompts import ANSWER_PREFIX, domain_prompts, extractor_prompt, generator_prompt
from dsl.expr.serialize import ARITHMETIC, to_infix, to_sexpr
from dsl.expr.skeletons import enumerate_skeletons
from dsl.expr.suite import hashed_rng
from dsl.expr.tree import Node
from kt_train.hf_dataset import CardInfo, row_id, write_hf_dataset
from kt_train.models import DEFAULT_MODEL
from kt_train.options import command_line
from kt_train.token_lengths import ChatTokenizer, length_card_section, length_stats

FT_DOMAINS = ("arithmetic", "assembly")
SPLITS = ("train", "test")
DIRECTIONS = ("e->w", "w->e")
MANIFEST = "ft_data.json"
FORMAT = 2
"""The version of the files `write_ft_dataset` makes (in the manifest, and in the name of the recipes' cached copy)."""
SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("direction", pa.string()),
        ("domain", pa.string()),
        ("depth", pa.int64()),
        ("pair_id", pa.string()),
        ("expression", pa.string()),
    ]
)


@dataclass
class FTDataConfig:
    """What fine-tuning data to build."""

    domain: str = field(default="arithmetic", metadata={"help": "expression domain", "choices": list(FT_DOMAINS)})
    pairs_per_depth: int = field(default=500, metadata={"help": "distinct (expression, word problem) pairs per depth"})
    depths: tuple[int, ...] = field(default=(2, 3, 4, 5), metadata={"help": "tree depths"})
    test_fraction: float = field(default=0.1, metadata={"help": "share of each depth's pairs held out as test"})
    seed: int = field(default=0, metadata={"help": "seed of every draw and of the split"})
    operator_counts: tuple[int, ...] = field(
        default=(2, 3, 4, 5, 6, 7, 8), metadata={"help": "arithmetic: operator counts k of the skeleton pool"}
    )
    variables: str = field(default="QRSTUVWXYZ", metadata={"help": "arithmetic: variable letters (not A..H)"})
    min_constant: int = field(default=11, metadata={"help": "arithmetic: smallest constant (above the suite's 10)"})
    max_constant: int = field(default=20, metadata={"help": "arithmetic: largest constant"})
    generator_shots: int = field(default=0, metadata={"help": "exemplars in the e->w (generator) prompts"})
    extractor_shots: int = field(default=0, metadata={"help": "exemplars in the w->e (extractor) prompts"})
    max_draws_factor: int = field(
        default=50, metadata={"help": "give up after pairs_per_depth * this many draws at a depth (duplicates)"}
    )

    def __post_init__(self) -> None:
        self.depths = tuple(self.depths)
        self.operator_counts = tuple(self.operator_counts)
        if self.domain not in FT_DOMAINS:
            raise ValueError(f"domain must be one of {FT_DOMAINS}, got {self.domain!r}")
        if self.pairs_per_depth < 1:
            raise ValueError(f"pairs_per_depth must be >= 1, got {self.pairs_per_depth}")
        if not self.depths or any(d < 1 for d in self.depths) or len(set(self.depths)) != len(self.depths):
            raise ValueError(f"depths must be distinct positive integers, got {self.depths}")
        if not 0.0 <= self.test_fraction < 1.0:
            raise ValueError(f"test_fraction must be in [0, 1), got {self.test_fraction}")
        if not self.operator_counts or any(k < 1 for k in self.operator_counts):
            raise ValueError(f"operator_counts must be positive integers, got {self.operator_counts}")
        if self.domain == "arithmetic":
            for depth in self.depths:
                if not _skeleton_pool(self.operator_counts, depth):
                    raise ValueError(f"depths: no skeleton of depth {depth} with k in {self.operator_counts}")
            self.arithmetic_config()  # validates variables and constants
        pools = domain_prompts(self.domain)
        if not 0 <= self.generator_shots <= len(pools.generator_pool):
            raise ValueError(f"generator_shots must be in 0..{len(pools.generator_pool)}, got {self.generator_shots}")
        if not 0 <= self.extractor_shots <= len(pools.extractor_pool):
            raise ValueError(f"extractor_shots must be in 0..{len(pools.extractor_pool)}, got {self.extractor_shots}")
        if self.max_draws_factor < 1:
            raise ValueError(f"max_draws_factor must be >= 1, got {self.max_draws_factor}")

    def arithmetic_config(self) -> ArithmeticConfig:
        """The instantiation settings of arithmetic FT expressions."""
        return ArithmeticConfig(
            variables=self.variables, min_constant=self.min_constant, max_constant=self.max_constant
        )


def _skeleton_pool(operator_counts: tuple[int, ...], depth: int) -> list[Node]:
    return [skeleton for k in operator_counts for skeleton in enumerate_skeletons(k, depth)]


def _draw(config: FTDataConfig, depth: int, index: int, pool: list[Node]) -> tuple[str, str]:
    """The `index`-th (expression text, word problem) draw at `depth`."""
    rng = hashed_rng("ft-data", config.domain, config.seed, depth, index)
    if config.domain == "arithmetic":
        node = instantiate(rng.choice(pool), rng, config.arithmetic_config())
        return to_infix(node, ARITHMETIC), render_arithmetic(node, rng)
    node = random_assembly(rng, depth)
    return to_sexpr(node), render_assembly(node, rng)


def _pairs(config: FTDataConfig, depth: int, seen: set[str]) -> list[tuple[str, str]]:
    """`pairs_per_depth` pairs with expressions not in `seen` (which is updated)."""
    pool = _skeleton_pool(config.operator_counts, depth) if config.domain == "arithmetic" else []
    pairs: list[tuple[str, str]] = []
    max_draws = config.pairs_per_depth * config.max_draws_factor
    for index in range(max_draws):
        if len(pairs) == config.pairs_per_depth:
            break
        expression, word_problem = _draw(config, depth, index, pool)
        if expression not in seen:
            seen.add(expression)
            pairs.append((expression, word_problem))
    if len(pairs) < config.pairs_per_depth:
        raise ValueError(f"only {len(pairs)} distinct expressions of depth {depth} in {max_draws} draws")
    return pairs


def _records(
    config: FTDataConfig, expression: str, word_problem: str, depth: int, pair_id: str
) -> list[dict[str, Any]]:
    common = {"domain": config.domain, "depth": depth, "pair_id": pair_id, "expression": expression}
    user_gen = generator_prompt(expression, config.domain, shots=config.generator_shots)
    user_ext = extractor_prompt(word_problem, config.domain, shots=config.extractor_shots)
    return [
        {"id": row_id(pair_id, "e2w"), "messages": _chat(user_gen, word_problem), "direction": "e->w", **common},
        {
            "id": row_id(pair_id, "w2e"),
            "messages": _chat(user_ext, f"{ANSWER_PREFIX} {expression}"),
            "direction": "w->e",
            **common,
        },
    ]


def _chat(user: str, assistant: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]


def build_ft_records(config: FTDataConfig) -> dict[str, list[dict[str, Any]]]:
    """{"train": [...], "test": [...]}: two chats per pair; per depth, round(test_fraction * n) pairs go to test."""
    splits: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLITS}
    seen: set[str] = set()
    for depth in config.depths:
        pairs = _pairs(config, depth, seen)
        ids = [f"{config.domain}-d{depth}-{index:05d}" for index in range(len(pairs))]
        order = sorted(
            range(len(pairs)), key=lambda i: hashlib.sha256(f"split:{config.seed}:{ids[i]}".encode()).digest()
        )
        test = set(order[: round(config.test_fraction * len(pairs))])
        for index, (expression, word_problem) in enumerate(pairs):
            split = "test" if index in test else "train"
            splits[split].extend(_records(config, expression, word_problem, depth, ids[index]))
    return splits


def _card_info(config: FTDataConfig, counts: dict[str, Any], lengths: str, command: str | None) -> CardInfo:
    table = "\n".join(
        f"| {split} | {c['pairs']} | {c['messages']} | {', '.join(f'{d}: {n}' for d, n in c['by_depth'].items())} |"
        for split, c in counts.items()
    )
    description = f"""Fine-tuning chats for the NL round trip (paper 002, §4 and App. O) made by `kt nl ft-data`:
{config.domain} expressions with procedural word problems, each pair in both directions: `e->w` (the generator: the
expression in, the word problem out; id `<pair>/e2w`) and `w->e` (the extractor: the word problem in,
`{ANSWER_PREFIX} <expression>` out; id `<pair>/w2e`). Both chats of a pair are in the same split. Train on it with
`recipes/sft_nl.py` or stock `trl sft`.

| split | pairs | chats | chats by depth |
|---|---|---|---|
{table}

{lengths}"""
    return CardInfo(
        pretty_name=f"NL round trip fine-tuning chats: {config.domain}",
        description=description,
        command=command,
        tags=("nl-round-trip", "word-problems", "sft"),
        language=("en",),
    )


def write_ft_dataset(
    records: dict[str, list[dict[str, Any]]],
    output_dir: Path | str,
    config: FTDataConfig,
    length_tokenizer: ChatTokenizer | str | None = DEFAULT_MODEL,
    command: str | None = None,
) -> Path:
    """`output_dir` as a dataset (`kt_train.hf_dataset`: train and test splits, a card with the counts and, with a
    `length_tokenizer`, the chats' token lengths) and ft_data.json (config and counts), which marks a finished write:
    it is removed first and written last. Returns `output_dir`."""
    directory = Path(output_dir)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MANIFEST).unlink(missing_ok=True)
    counts = {
        split: {
            "messages": len(rows),
            "pairs": len({row["pair_id"] for row in rows}),
            "by_depth": {str(d): n for d, n in sorted(Counter(row["depth"] for row in rows).items())},
        }
        for split, rows in ((split, records.get(split, [])) for split in SPLITS)
    }
    length_tokenizer = ChatTokenizer.of(length_tokenizer)
    lengths = {}
    if length_tokenizer is not None:
        train = records.get("train", [])
        lengths = length_stats(length_tokenizer.count([row["messages"] for row in train]), length_tokenizer.name)
    tables = {split: pa.Table.from_pylist(records.get(split, []), schema=SCHEMA) for split in SPLITS}
    info = _card_info(config, counts, length_card_section(lengths), command)
    write_hf_dataset(directory, tables, info)
    manifest = {"config": asdict(config), "counts": counts, "token_lengths": lengths, "format": FORMAT}
    tmp = directory / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, directory / MANIFEST)
    return directory


__all__ = [
    "DIRECTIONS",
    "FORMAT",
    "FT_DOMAINS",
    "MANIFEST",
    "SCHEMA",
    "FTDataConfig",
    "build_ft_records",
    "write_ft_dataset",
]


def make_ft_data(config: FTDataConfig, output_dir: Path | str) -> dict[str, list[dict[str, Any]]]:
    """`kt nl ft-data` as a call: the chats of `config` built and written with the command that rebuilds them; the
    records by split."""
    records = build_ft_records(config)
    write_ft_dataset(records, output_dir, config, command=command_line("kt nl ft-data", config) + " --output OUT")
    return records
