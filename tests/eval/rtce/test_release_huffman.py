"""The release's Huffman answers through the CLI: `kt rtce build --release-dir --huffman-target bytes`, then
`kt eval rtce --scoring release` gives the release's verdicts (its Huffman z is the packed bytes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kt_train.cli import main
from tests.tracegen.release_fixtures import RELEASE_INPUTS, release_output, write_release


@pytest.mark.parametrize("target", ["bytes", "triple"])
def test_release_huffman_answers_through_the_cli(tmp_path: Path, target: str) -> None:
    bench, out = tmp_path / "bench", tmp_path / "out"
    build = ["rtce", "build", "--release-dir", str(write_release(tmp_path / "r")), "--output", str(bench)]
    assert main([*build, "--huffman-target", target]) == 0
    rows = []
    for index, (x, _category) in enumerate(RELEASE_INPUTS):
        z = release_output("huffman", x)  # the release's answer: the bytes
        wrong = [*z, 1]
        for task in ("output_pred", "output_pred_inv"):
            completions = [f'[ANSWER]\n{{"output": {json.dumps(v)}}}\n[/ANSWER]' for v in (z, wrong)]
            rows.append({"id": f"release-{index:04d}/huffman/{task}", "completions": completions})
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["eval", "rtce", "--benchmark", str(bench), "--output", str(out), "--predictions", str(predictions)]
    tasks = ["--tasks", "output_pred", "output_pred_inv"]
    assert main([*args, "--algorithms", "huffman", *tasks, "--scoring", "release"]) == 0
    scored = [json.loads(line) for line in (out / "scored.jsonl").read_text().splitlines()]
    assert len(scored) == 2 * len(RELEASE_INPUTS)
    statuses = {tuple(row["release_status"]) for row in scored}
    # the bytes target: the release's verdicts; the triple target: its correct answers become wrong
    assert statuses == ({("correct", "wrong")} if target == "bytes" else {("wrong", "wrong")})
