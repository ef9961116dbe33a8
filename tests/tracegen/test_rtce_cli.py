"""`kt rtce encode/decode` as a user runs it: a real subprocess of the installed console script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TEXT = "key: value\nlist:\n  - 日本\n  - 🙂\n"


def kt(*args: str) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("kt") or str(Path(sys.executable).with_name("kt"))
    return subprocess.run([executable, *args], capture_output=True, text=True, timeout=120)


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr lines, ignoring warnings about other command groups."""
    return [line for line in result.stderr.splitlines() if not line.startswith("kt: warning:")]


@pytest.mark.parametrize(
    ("name", "text"), [("lzw", TEXT), ("ae", "hello 🙂"), ("rle", "aaab\n\nbb"), ("huffman", TEXT)]
)
def test_encode_decode_round_trip(name: str, text: str) -> None:
    encoded = kt("rtce", "encode", "--algorithm", name, text)
    assert encoded.returncode == 0, encoded.stderr
    payload = json.loads(encoded.stdout)
    assert set(payload) == {"z", "freq"}
    assert (payload["freq"] is None) == (name in ("lzw", "rle"))
    # the printed freq goes back as it is, `null` included
    decoded = kt(
        "rtce", "decode", "--algorithm", name, "--freq", json.dumps(payload["freq"]), json.dumps(payload["z"])
    )
    assert decoded.returncode == 0, decoded.stderr
    assert json.loads(decoded.stdout) == text


def test_encode_prints_the_reference_values() -> None:
    result = kt("rtce", "encode", "--algorithm", "rle", "aaabcc")
    assert json.loads(result.stdout) == {"z": [["a", 3], ["b", 1], ["c", 2]], "freq": None}
    result = kt("rtce", "encode", "--algorithm", "huffman", "aab")
    assert json.loads(result.stdout) == {"z": [[192], {"b": "0", "a": "1"}, 5], "freq": {"a": 2, "b": 1}}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["decode", "--algorithm", "rle", '[["a", 3]'], "invalid JSON"),
        (["decode", "--algorithm", "ae", "0.5"], "needs --freq"),
        (["decode", "--algorithm", "ae", "--freq", "null", "0.5"], "needs --freq"),
        (["decode", "--algorithm", "lzw", '{"a": 1}'], "LZW z must be"),
        (["decode", "--algorithm", "huffman", "--freq", "[1]", "[[1], {}, 0]"], "--freq must be a JSON object"),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(args: list[str], message: str) -> None:
    result = kt("rtce", *args)
    assert result.returncode == 2 and result.stdout == ""
    lines = error_lines(result)
    assert len(lines) == 1 and lines[0].startswith("kt: error: ") and message in lines[0]


def test_unknown_algorithm_is_a_usage_error() -> None:
    result = kt("rtce", "encode", "--algorithm", "zip", "abc")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_build_writes_the_benchmark_with_the_paper_defaults(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from kt_train.cli import main

    assert main(["rtce", "build", "--output", str(tmp_path), "--num-inputs", "3", "--families", "dna"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["prompt_style"] == "paper" and summary["huffman_target"] == "triple"
    assert summary["source"] == "generated" and summary["families"] == {"dna": 3}
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    assert main(["rtce", "build", "--output", str(tmp_path), "--families", "audio"]) == 2
    assert "unknown input family audio" in capsys.readouterr().err
