"""`kt rtce build --prompt-style release`: the release's own prompts, rendered by the release's code at build time,
byte-identical to what that code writes (here a renderer in the release's format made by the test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kt_train.cli import main
from tests.tracegen.release_fixtures import (
    RELEASE_INPUTS,
    SYSTEM,
    expected_prompt,
    release_output,
    write_release,
    write_renderer,
)
from tracegen.algorithms import get_algorithm
from tracegen.benchmark import build_benchmark, load_corpus
from tracegen.release_prompts import with_given
from tracegen.tasks import TASKS, make_task


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return write_renderer(write_release(tmp_path / "release"))


def test_release_prompts_are_byte_identical_to_the_renderer(tmp_path: Path, release: Path) -> None:
    summary = build_benchmark(tmp_path / "bench", release_dir=release, style="release", progress=False)
    assert summary["prompt_style"] == "release" and summary["huffman_target"] == "bytes"
    assert summary["system_prompt"] == SYSTEM
    corpus = load_corpus(tmp_path / "bench")
    assert len(corpus) == len(RELEASE_INPUTS)
    for entry, (x, _category) in zip(corpus, RELEASE_INPUTS, strict=True):
        for algorithm, per_algorithm in entry["algorithms"].items():
            for task in TASKS:
                record = per_algorithm["tasks"][task.value]
                assert record["prompt"] == expected_prompt(algorithm, task.value, x), (entry["id"], algorithm, task)
                # the labels are the style's neighbours': only the prompt is the release's
                assert record["answer"] == make_task(get_algorithm(algorithm, "bytes"), task, x).answer
                # the span holds the given value: another value there is the renderer's prompt for it
                shown = x if task.predicts_z else release_output(algorithm, x)
                start, end = record["given_span"]
                assert record["prompt"][start:end] == f"{shown}"
                if not task.predicts_z:
                    other = [1, 2, 3] if algorithm != "ae" else 0.25
                    assert with_given(record["prompt"], record["given_span"], other) == expected_prompt(
                        algorithm, task.value, x, other
                    )
    assert not list(release.rglob("__pycache__"))  # the release folder is read, never written


def test_cli_builds_release_prompts(capsys: pytest.CaptureFixture[str], tmp_path: Path, release: Path) -> None:
    args = ["rtce", "build", "--release-dir", str(release), "--output", str(tmp_path / "b"), "--prompt-style"]
    assert main([*args, "release"]) == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert [summary[k] for k in ("prompt_style", "huffman_target", "system_prompt")] == ["release", "bytes", SYSTEM]


@pytest.mark.parametrize(
    ("setup", "extra", "message"),
    [
        ("data-only", [], "no src/data/build_codeio_msg.py under"),
        ("renderer", ["--huffman-target", "triple"], "use --huffman-target bytes"),
        ("broken", [], "the release's renderer"),
    ],
)
def test_release_style_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, setup: str, extra: list[str], message: str
) -> None:
    root = write_release(tmp_path / "release")
    if setup != "data-only":
        write_renderer(root)
    if setup == "broken":
        (root / "src" / "core" / "prompts.py").write_text("raise SystemExit('templates missing')\n")
    args = ["rtce", "build", "--release-dir", str(root), "--output", str(tmp_path / "b"), "--prompt-style", "release"]
    assert main([*args, *extra]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and message in err[0], err


def test_release_style_needs_the_release(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs --release-dir"):
        build_benchmark(tmp_path, num_inputs=2, style="release", progress=False)
