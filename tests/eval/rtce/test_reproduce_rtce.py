"""`bench/reproduce_rtce.py`: the release's committed generations through `kt rtce build` and `kt eval rtce`, the
agreement on all rows and on answered rows; no generations: exit 2, one error line, the docs untouched."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from tests.tracegen.release_fixtures import RELEASE_INPUTS, RELEASE_TASKS, release_output, write_release

SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "reproduce_rtce.py"
GENERATIONS = "codeio_1k_gens_model_qwq_32b_temp_0.2_n5_verified.csv"
COLUMNS = ["model", "temperature", "io_pred", "algo", "input", "category", "status", "actual", "predicted", "message"]


def reproduce(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)


def write_generations(root: Path, algorithm: str) -> int:
    """Five committed rows per prompt as the release writes them (right, wrong, two without answer, right); the
    number of answered rows."""
    path = root / "data" / "processed" / algorithm / GENERATIONS
    answered = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        for x, category in RELEASE_INPUTS:
            for task in RELEASE_TASKS:
                right = x if task.startswith("input") else release_output(algorithm, x)
                wrong = x + "?" if task.startswith("input") else [*right, 7]
                for value, status in (
                    (right, "correct"),
                    (wrong, "wrong"),
                    (None, "no answer"),
                    (None, "no answer"),
                    (right, "correct"),
                ):
                    predicted = json.dumps("no answer" if value is None else value)
                    answered += value is not None
                    row = ["Qwen/QwQ-32B", "0.2", task, algorithm, x, category, status, json.dumps(right), predicted]
                    writer.writerow(dict(zip(COLUMNS, [*row, ""], strict=True)))
    return answered


def test_without_generations_exit_2_one_line_docs_untouched(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    done = reproduce("--release-dir", str(write_release(tmp_path / "r")), "--doc", str(doc))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "error: no generations" in done.stderr
    assert not doc.exists()


def test_generations_through_the_cli_agree_on_all_and_answered_rows(tmp_path: Path) -> None:
    root = write_release(tmp_path / "r")
    answered = {name: write_generations(root, name) for name in ("lzw", "huffman")}  # Huffman: the bytes
    doc = tmp_path / "benchmarks.md"
    done = reproduce("--release-dir", str(root), "--doc", str(doc), "--keep", str(tmp_path / "work"))
    assert done.returncode == 0, done.stderr
    rows, answered_rows = 2 * len(RELEASE_INPUTS) * 4 * 5, sum(answered.values())
    assert f"All rows: {rows} of {rows} agree; answered rows: {answered_rows} of {answered_rows}." in done.stdout
    assert "Not committed by the release: AE, RLE." in done.stdout
    assert "<!-- bench:rtce_release -->" in doc.read_text()
    predictions = (tmp_path / "work" / "predictions.jsonl").read_text().splitlines()
    assert len(predictions) == 2 * len(RELEASE_INPUTS) * 4  # one row per prompt, its five committed rows
    assert {len(json.loads(line)["completions"]) for line in predictions} == {5}
