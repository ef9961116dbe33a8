"""Flags derived from config dataclasses (kt_train.options): one declaration, defaults in --help, --config files."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from kt_train.cli import OneLineParser, UsageError
from kt_train.options import add_options, options_from, write_config_file


@dataclass
class Example:
    """A config with every supported kind of field."""

    output: str = field(metadata={"help": "where", "metavar": "DIR"})
    steps: int = field(default=3, metadata={"help": "how many"})
    rate: float = field(default=0.5, metadata={"help": "how fast, in %"})
    mode: Literal["a", "b"] = field(default="a", metadata={"help": "which"})
    limit: int | None = field(default=None, metadata={"help": "at most"})
    names: list[str] = field(default_factory=lambda: ["x"], metadata={"help": "names", "choices": ["x", "y", "z"]})
    adapters: dict[str, str] = field(default_factory=dict, metadata={"help": "by label", "aliases": ["--adapter"]})
    panels: dict[str, list[str]] = field(default_factory=dict, metadata={"help": "groups", "aliases": ["--panel"]})
    roundtrip: bool = field(default=True, metadata={"help": "second call"})
    quiet: bool = field(default=False, metadata={"help": "no bars"})

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError("--steps must be >= 1")


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="kt example")
    add_options(parser, Example)
    return parser


def test_flags_cover_every_field_and_build_the_config() -> None:
    args = _parser().parse_args(
        [
            "--output",
            "o",
            "--steps",
            "7",
            "--rate",
            "1e-3",
            "--mode",
            "b",
            "--limit",
            "4",
            "--names",
            "y",
            "z",
            "--adapter",
            "lzw=/a",
            "--adapters",
            "rle=/b",
            "--panel",
            "p=e1,e2",
            "--no-roundtrip",
            "--quiet",
        ]
    )
    config = options_from(Example, args)
    assert config == Example(
        "o", 7, 1e-3, "b", 4, ["y", "z"], {"lzw": "/a", "rle": "/b"}, {"p": ["e1", "e2"]}, False, True
    )
    assert options_from(Example, _parser().parse_args(["--output", "o"])) == Example("o")


def test_help_shows_every_default() -> None:
    text = " ".join(_parser().format_help().split())
    shown = ["(required)", "how many (default: 3)", "in % (default: 0.5)", "(default: none)", "(default: x)"]
    shown += ["--roundtrip, --no-roundtrip", "second call (default: True)", "--adapters KEY=VALUE, --adapter"]
    for part in shown:
        assert part in text, part


def test_bad_flags_are_one_line_errors() -> None:
    for argv, message in [
        (["--output", "o", "--steps", "many"], "argument --steps: invalid int value: 'many'"),
        (["--output", "o", "--mode", "c"], "invalid choice: 'c'"),
        (["--output", "o", "--adapter", "nolabel"], "expected KEY=VALUE"),
    ]:
        with pytest.raises(UsageError, match=message):
            _parser().parse_args(argv)
    with pytest.raises(ValueError, match=r"missing required option.*--output"):
        options_from(Example, _parser().parse_args([]))
    with pytest.raises(ValueError, match="--steps must be >= 1"):
        options_from(Example, _parser().parse_args(["--output", "o", "--steps", "0"]))


def test_a_config_file_gives_values_and_flags_override_it(tmp_path: Path) -> None:
    written = write_config_file(tmp_path / "c.json", Example("o", steps=9, adapters={"a": "/x"}, roundtrip=False))
    config = options_from(Example, _parser().parse_args(["--config", str(written), "--steps", "2"]))
    assert config == Example("o", steps=2, adapters={"a": "/x"}, roundtrip=False)
    (tmp_path / "c.yaml").write_text("output: o\nmode: b\nnames: [z]\n", encoding="utf-8")
    assert options_from(Example, _parser().parse_args(["--config", str(tmp_path / "c.yaml")])).names == ["z"]


def test_bad_config_files_name_the_file_and_the_key(tmp_path: Path) -> None:
    cases = {
        "unknown.json": (json.dumps({"output": "o", "stepz": 1}), r"unknown\.json: unknown option\(s\) stepz"),
        "type.json": (json.dumps({"output": "o", "steps": "many"}), "--steps: 'many' is not a valid int"),
        "list.json": (json.dumps({"output": "o", "rate": [1, 2]}), r"--rate: \[1, 2\] is not a valid float"),
        "broken.yaml": ("output: [o\n", r"broken\.yaml: not YAML"),
        "scalar.yaml": ("just text\n", "expected a mapping"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(ValueError, match=message):
            options_from(Example, _parser().parse_args(["--config", str(tmp_path / name)]))
    with pytest.raises(FileNotFoundError, match="no such file"):
        options_from(Example, _parser().parse_args(["--config", str(tmp_path / "none.json")]))
