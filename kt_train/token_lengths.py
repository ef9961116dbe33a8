"""How long an SFT corpus's rows are in a named tokenizer's tokens, and the card section that warns when rows exceed
the `max_length`s people train with (TRL's `SFTConfig.max_length` is 1,024 by default: longer rows are truncated,
and the end of a row is where its answer is)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

TRL_DEFAULT_MAX_LENGTH = 1024
COMMON_MAX_LENGTHS = (512, 1024, 2048, 4096, 8192)
Chat = Sequence[Mapping[str, str]]


@dataclass(frozen=True)
class ChatTokenizer:
    """A tokenizer and the name a card gives it (the hub id when it has one)."""

    name: str
    tokenizer: Any

    @classmethod
    def load(cls, name_or_path: str) -> ChatTokenizer:
        from kt_train.models import get_tokenizer, hub_id_of

        return cls(hub_id_of(name_or_path) or name_or_path, get_tokenizer(name_or_path))

    @classmethod
    def of(cls, tokenizer: ChatTokenizer | str | None) -> ChatTokenizer | None:
        """`tokenizer` itself, loaded when it is a name; None stays None (no token lengths)."""
        return cls.load(tokenizer) if isinstance(tokenizer, str) else tokenizer

    def count(self, chats: Sequence[Chat]) -> list[int]:
        """Tokens of each chat as its chat template renders it for training (no generation prompt)."""
        texts = [self.tokenizer.apply_chat_template(list(chat), tokenize=False) for chat in chats]
        return [len(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]


def length_stats(counts: Sequence[int], tokenizer: str) -> dict[str, Any]:
    """Percentiles of `counts` and the share of rows longer than each common `max_length`."""
    values = np.asarray(counts, dtype=np.int64)
    if not len(values):
        return {"tokenizer": tokenizer, "rows": 0}
    return {
        "tokenizer": tokenizer,
        "rows": len(values),
        "min": int(values.min()),
        "median": int(np.median(values)),
        "p90": int(np.percentile(values, 90)),
        "p99": int(np.percentile(values, 99)),
        "max": int(values.max()),
        "longer_than": {str(n): round(float((values > n).mean()), 4) for n in COMMON_MAX_LENGTHS},
    }


def covering_max_length(longest: int) -> int:
    """The smallest power of two, at least 512, that holds a row of `longest` tokens."""
    return max(512, 1 << (longest - 1).bit_length())


def length_card_section(stats: Mapping[str, Any]) -> str:
    """Markdown: the distribution, a table of rows longer than each common `max_length`, and a warning when rows
    exceed TRL's default."""
    if not stats.get("rows"):
        return ""
    longer = stats["longer_than"]
    table = "\n".join(
        f"| {int(n):,}{' (TRL default)' if int(n) == TRL_DEFAULT_MAX_LENGTH else ''} | {share:.1%} |"
        for n, share in longer.items()
    )
    text = (
        f"## Length in tokens\n\nEach row's chat template, in tokens of `{stats['tokenizer']}`: "
        f"min {stats['min']:,}, median {stats['median']:,}, 90th percentile {stats['p90']:,}, "
        f"99th {stats['p99']:,}, max {stats['max']:,}.\n\n"
        f"| max_length | rows longer |\n|---|---|\n{table}\n"
    )
    over = longer[str(TRL_DEFAULT_MAX_LENGTH)]
    if over > 0:
        text += (
            f"\n> **Warning:** {over:.1%} of the rows are longer than {TRL_DEFAULT_MAX_LENGTH:,} tokens, TRL's "
            f"default `max_length`; trained with it they are truncated and lose their end (the answer). Train with "
            f"`--max_length {covering_max_length(stats['max'])}`, which holds every row.\n"
        )
    return text


__all__ = [
    "COMMON_MAX_LENGTHS",
    "TRL_DEFAULT_MAX_LENGTH",
    "ChatTokenizer",
    "covering_max_length",
    "length_card_section",
    "length_stats",
]
