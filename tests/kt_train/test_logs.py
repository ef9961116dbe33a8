"""Logging and one-line errors (kt_train.logs): `kt` and the recipes report bad input in one line naming the file or
key (exit 2), other failures in one line (exit 1), and show the traceback with --debug or KT_DEBUG=1."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kt_train.cli import main as kt_main
from kt_train.logs import DEBUG_ENV, configure_logging, report_error, take_debug_flag


@pytest.fixture(autouse=True)
def no_debug_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEBUG_ENV, "0")  # and whatever --debug sets is undone after each test


def test_the_debug_flag_anywhere_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert take_debug_flag(["eval", "kt", "--n", "2"]) == (["eval", "kt", "--n", "2"], False)
    assert take_debug_flag(["eval", "--debug", "kt"]) == (["eval", "kt"], True)
    import os

    assert os.environ[DEBUG_ENV] == "1"  # child processes see it
    monkeypatch.setenv(DEBUG_ENV, "0")
    assert take_debug_flag(["x"]) == (["x"], False)
    monkeypatch.setenv(DEBUG_ENV, "1")
    assert take_debug_flag(["x"]) == (["x"], True)


def test_an_error_is_one_line_with_its_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert report_error("kt", ValueError("bad value\n  in two lines"), debug=False) == 2
    assert report_error("kt", FileNotFoundError("no such file: x.yaml"), debug=False) == 2
    assert report_error("kt", KeyError("sequence"), debug=False) == 2
    assert report_error("kt", RuntimeError("it broke"), debug=False) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4 and all(line.startswith("kt: error: ") and "--debug" in line for line in lines), lines
    assert "bad value in two lines" in lines[0] and "KeyError: 'sequence'" in lines[2]
    assert "RuntimeError: it broke" in lines[3]
    try:
        raise RuntimeError("deep down")
    except RuntimeError as exc:
        assert report_error("kt", exc, debug=True) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "raise RuntimeError" in err


def test_logging_ours_at_info_the_rest_at_warning(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(debug=False)
    logging.getLogger("kt_train.somewhere").info("resuming from checkpoint-2")
    logging.getLogger("urllib3.connectionpool").info("noise")
    logging.getLogger("kt_train.somewhere").debug("details")
    err = capsys.readouterr().err
    assert "resuming from checkpoint-2" in err and "noise" not in err and "details" not in err
    configure_logging(debug=True)
    logging.getLogger("kt_train.somewhere").debug("details")
    assert "details" in capsys.readouterr().err
    configure_logging(debug=False)
    assert sum(type(h).__name__ == "_StderrHandler" for h in logging.getLogger().handlers) == 1  # set up once


def test_a_corrupt_parquet_is_one_line_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Flipped bytes in the set's Parquet: was a pyarrow traceback with exit 1."""
    kt_main(["dsl", "eval-set", "--bytes", "2000", "--seed", "1", "--output", str(tmp_path / "set"), "--quiet"])
    shard = next((tmp_path / "set" / "data").glob("*.parquet"))
    data = bytearray(shard.read_bytes())
    data[200:400] = bytes(b ^ 0xFF for b in data[200:400])
    shard.write_bytes(bytes(data))
    capsys.readouterr()
    command = ["eval", "kt-baselines", "--dataset", str(tmp_path / "set"), "--output", str(tmp_path / "out")]
    assert kt_main(command) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(shard) in err[0] and "not a readable Parquet file" in err[0], err
    assert kt_main([*command, "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "kt: error: " in err


def test_a_sequence_column_of_strings_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "set" / "data").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a"], "sequence": ["1,2,3"]}), tmp_path / "set" / "data" / "x.parquet")
    command = ["eval", "kt-baselines", "--dataset", str(tmp_path / "set"), "--output", str(tmp_path / "out")]
    assert kt_main(command) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "x.parquet: item a: `sequence` must be a list of integers" in err[0], err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
