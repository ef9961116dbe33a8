"""The `kt` command as a user runs it: a real subprocess of the installed console script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = """sequence_1 = range_func_up(3, 6)
sequence_2 = repeat_num(3, 9)
sequence_3 = interleave(sequence_1, sequence_2)
output = sequence_3
"""


def kt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("kt") or str(Path(sys.executable).with_name("kt"))
    return subprocess.run([executable, *args], capture_output=True, text=True, input=stdin, timeout=300)


@pytest.fixture
def program_file(tmp_path: Path) -> Path:
    path = tmp_path / "program.txt"
    path.write_text(PROGRAM)
    return path


def test_help_lists_the_subcommands() -> None:
    result = kt("--help")
    assert result.returncode == 0 and "dsl" in result.stdout
    result = kt("dsl", "--help")
    for command in ("generate", "eval-set", "merge", "run", "bits", "render", "sample"):
        assert command in result.stdout


def test_run_prints_the_sequence_as_json(program_file: Path) -> None:
    result = kt("dsl", "run", str(program_file))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [3, 9, 4, 9, 5, 9, 6]
    assert json.loads(kt("dsl", "run", "-", stdin=PROGRAM).stdout) == [3, 9, 4, 9, 5, 9, 6]


def test_bits_prints_the_uniform_prior_code_length(program_file: Path) -> None:
    import math

    expected = 4 * math.log2(25) + 16 + (8 + math.log2(20)) + 2 * math.log2(3)
    assert float(kt("dsl", "bits", str(program_file)).stdout) == pytest.approx(expected, rel=1e-12)


def test_render_with_values_and_as_python(program_file: Path) -> None:
    with_values = kt("dsl", "render", "--values", str(program_file)).stdout
    assert with_values.splitlines()[0] == "sequence_1 = range_func_up(3, 6) # [3, 4, 5, 6]"
    python = kt("dsl", "render", "--python", str(program_file)).stdout
    namespace: dict = {}
    exec(python, namespace)  # our own rendering of a trusted program
    assert namespace["output"] == [3, 9, 4, 9, 5, 9, 6]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sequence_1 = range_func_up(1, 4)\nsequence_2 = explode(sequence_1)\noutput = sequence_2\n", "line 2:"),
        ("sequence_1 = range_func_up(1)\noutput = sequence_1\n", "line 1:"),
        ("sequence_1 = range_func_up(1, 4)\n", "no 'output"),
        ("sequence_1 = repeat_list(99999999999, sequence_0)\noutput = sequence_1\n", "line 1:"),
        ("sequence_1 = range_func_up(0, 99999999999)\noutput = sequence_1\n", "line 1:"),
    ],
)
def test_bad_programs_give_one_error_line_and_exit_2(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    result = kt("dsl", "run", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kt: error:") and message in lines[0]


def test_missing_file_and_bad_config_are_one_line_errors(tmp_path: Path) -> None:
    result = kt("dsl", "bits", str(tmp_path / "nope.txt"))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    config = tmp_path / "sampler.yaml"
    config.write_text("concat_prob: 0.5\nnot_a_setting: 1\n")
    result = kt(
        "dsl", "generate", "--num-pairs", "10", "--output", str(tmp_path / "out"), "--sampler-config", str(config)
    )
    assert result.returncode == 2 and "not_a_setting" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_generate_prints_a_summary_and_writes_a_dataset(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    result = kt("dsl", "generate", "--num-pairs", "300", "--seed", "1", "--output", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    assert "wrote 300 pairs" in result.stdout
    assert (out / "README.md").exists() and list((out / "data").glob("*.parquet"))
