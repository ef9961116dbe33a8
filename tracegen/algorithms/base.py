"""The `Algorithm` record shared by the four RTCE compression algorithms, and small helpers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

FREQ_PLACEHOLDER = "FREQ_DICT"


def char_counts(text: str) -> dict[str, int]:
    """Symbol counts of `text` in first-occurrence order (what FREQ_DICT holds)."""
    counts: dict[str, int] = {}
    for c in text:
        counts[c] = counts.get(c, 0) + 1
    return counts


def inject_freq(template: str, freq: dict[str, int] | None) -> str:
    """Replace the FREQ_DICT placeholder of a source template with the Python repr of `freq`."""
    if FREQ_PLACEHOLDER not in template:
        return template
    if freq is None:
        raise ValueError("this algorithm's source needs a frequency dict")
    return template.replace(FREQ_PLACEHOLDER, repr(dict(freq)))


def to_jsonable(value: Any) -> Any:
    """A main_solution return value as JSON-able data: tuples become lists, recursively."""
    if isinstance(value, tuple | list):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def is_int(value: Any) -> bool:
    """True for a real int (bool excluded)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_freq(freq: Any) -> dict[str, int]:
    """Validate a frequency dict (str -> positive int); raise ValueError otherwise."""
    if not isinstance(freq, dict) or not all(isinstance(k, str) and is_int(v) and v > 0 for k, v in freq.items()):
        raise ValueError("freq must be an object mapping symbols to positive integer counts")
    return freq


def always_exact(text: str) -> bool:
    """Round trip holds for every input (all algorithms but float AE)."""
    return True


@dataclass(frozen=True)
class PromptFacts:
    """What the paper-framed prompts say about an algorithm's encoded form z, and how the release blinds its code."""

    z_type: str = field(metadata={"help": "z's type in the listing's I/O requirements"})
    z_text: str = field(metadata={"help": "z's description there"})
    answer_type: str = field(metadata={"help": "the JSON type an answer that gives z must have, with an example"})
    blind_names: Mapping[str, str] = field(
        default_factory=dict, metadata={"help": "identifier -> neutral name (the release's blinded listings)"}
    )
    blind_strings: Mapping[str, str] = field(
        default_factory=dict, metadata={"help": "string literal text that names the encoding -> neutral text"}
    )


@dataclass(frozen=True)
class Algorithm:
    """One RTCE compression algorithm: plain functions plus the main_solution source texts shown to models."""

    name: str
    label: str  # as reports and the paper's tables write it
    paper_column: int  # its column in the paper's tables (reports order algorithms by it)
    description: str
    needs_freq: bool
    freq: Callable[[str], dict[str, int] | None]
    encode: Callable[[str], Any]
    decode: Callable[[Any, dict[str, int] | None], str]
    encoder_template: str
    decoder_template: str
    from_json: Callable[[Any], Any]
    prompt: PromptFacts
    exact: Callable[[str], bool] = always_exact
    variant: str = ""  # "" for the paper's listing; "bytes": Huffman's release target (z = the packed bytes)

    def encoder_source(self, freq: dict[str, int] | None = None) -> str:
        """The encoder's main_solution source with FREQ_DICT injected (freq ignored when not needed)."""
        return inject_freq(self.encoder_template, freq) if self.needs_freq else self.encoder_template

    def decoder_source(self, freq: dict[str, int] | None = None) -> str:
        """The decoder's main_solution source with FREQ_DICT injected (freq ignored when not needed)."""
        return inject_freq(self.decoder_template, freq) if self.needs_freq else self.decoder_template

    def to_json(self, z: Any) -> Any:
        """The encoder's return value as JSON-able data."""
        return to_jsonable(z)
