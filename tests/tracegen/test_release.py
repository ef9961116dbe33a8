"""`kt rtce build --release-dir`: the paper's released inputs, in its order, families and categories."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tracegen.release_fixtures import RELEASE_INPUTS, release_output, write_release
from tracegen.algorithms import algorithms_for
from tracegen.benchmark import build_benchmark, load_corpus, load_summary
from tracegen.release import check_release_outputs, release_family, release_inputs
from tracegen.tasks import TASKS


@pytest.mark.parametrize("layout", ["checkout", "flat"])
def test_release_inputs_in_order_with_families(tmp_path: Path, layout: str) -> None:
    items = release_inputs(write_release(tmp_path, layout=layout))
    assert [(i.text, i.category) for i in items] == RELEASE_INPUTS
    assert [i.id for i in items] == [f"release-{k:04d}" for k in range(len(RELEASE_INPUTS))]
    assert [i.family for i in items] == ["string", "dna", "log", "yaml", "tabular", "string"]


def test_release_family_of_unknown_category() -> None:
    with pytest.raises(ValueError, match="no known family"):
        release_family("audio_wav")


def test_build_from_release_keeps_every_ae_input_with_four_tasks(tmp_path: Path) -> None:
    summary = build_benchmark(tmp_path / "bench", release_dir=write_release(tmp_path / "rel"), progress=False)
    corpus = load_corpus(tmp_path / "bench")
    assert [e["input"] for e in corpus] == [x for x, _ in RELEASE_INPUTS]
    assert summary["source"] == "release" and summary["num_items"] == len(RELEASE_INPUTS)
    assert summary["families"] == {"dna": 1, "log": 1, "string": 2, "tabular": 1, "yaml": 1}
    assert load_summary(tmp_path / "bench") == summary
    for entry in corpus:
        ae = entry["algorithms"]["ae"]
        assert set(ae["tasks"]) == {t.value for t in TASKS}
        # O/P Pred and I/P Pred-I are exact by construction; the decoder tasks are exact where float AE round-trips
        assert ae["tasks"]["output_pred"]["label_exact"] and ae["tasks"]["input_pred_inv"]["label_exact"]
        assert ae["tasks"]["output_pred_inv"]["label_exact"] == ae["roundtrip_ok"]
        if not ae["tasks"]["input_pred"]["label_exact"]:
            assert ae["tasks"]["input_pred"]["answer"] == entry["input"]  # the release's label, marked
    inexact = summary["inexact_labels"]["ae"]
    assert inexact["output_pred_inv"] == summary["roundtrip_failures"]["ae"] > 0  # the long log / YAML / CSV inputs
    assert all(v == 0 for name in ("lzw", "rle", "huffman") for v in summary["inexact_labels"][name].values())


def test_release_with_other_inputs_per_algorithm_is_refused(tmp_path: Path) -> None:
    root = write_release(tmp_path)
    path = root / "data" / "processed" / "rle" / "data.json"
    data = json.loads(path.read_text())
    data["ios"] = data["ios"][::-1]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"rle data\.json lists other inputs than lzw"):
        release_inputs(root)


def test_release_outputs_we_do_not_reproduce_are_refused(tmp_path: Path) -> None:
    root = write_release(tmp_path)
    path = root / "data" / "processed" / "lzw" / "data.json"
    data = json.loads(path.read_text())
    data["ios"][2]["output"] = [1, 2, 3]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"do not reproduce the release's outputs \(lzw: 1 inputs \(first 2\)\)"):
        build_benchmark(tmp_path / "bench", release_dir=root, progress=False)


def test_cli_build_release_dir_one_line_errors(tmp_path: Path) -> None:
    kt = [sys.executable, "-m", "kt_train.cli"]
    done = subprocess.run(
        [*kt, "rtce", "build", "--output", str(tmp_path / "b"), "--release-dir", str(write_release(tmp_path / "r"))],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["source"] == "release"
    missing = subprocess.run(
        [*kt, "rtce", "build", "--output", str(tmp_path / "c"), "--release-dir", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode != 0
    assert missing.stderr.strip().count("\n") == 0 and "does not exist" in missing.stderr


def test_grpo_rows_refuse_the_huffman_bytes_target(tmp_path: Path) -> None:
    from tracegen.rl_data import rtce_rl_rows

    build_benchmark(tmp_path, seed=1, num_inputs=2, huffman_target="bytes", progress=False)
    assert rtce_rl_rows(tmp_path, ["lzw"])  # the other algorithms are unaffected
    with pytest.raises(ValueError, match="triple target"):
        rtce_rl_rows(tmp_path, ["huffman"])


@pytest.mark.parametrize("target", ["triple", "bytes"])
def test_both_huffman_targets_reproduce_the_recorded_bytes(tmp_path: Path, target: str) -> None:
    root = write_release(tmp_path)
    mismatches = check_release_outputs(root, algorithms_for(target))
    assert mismatches == {name: [] for name in ("lzw", "ae", "rle", "huffman")}


def test_cli_build_release_dir_with_the_huffman_bytes_target(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from kt_train.cli import main

    root = write_release(tmp_path / "r")
    args = ["rtce", "build", "--output", str(tmp_path / "b"), "--release-dir", str(root), "--huffman-target", "bytes"]
    assert main(args) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["huffman_target"] == "bytes"
    for entry, (x, _category) in zip(load_corpus(tmp_path / "b"), RELEASE_INPUTS, strict=True):
        tasks = entry["algorithms"]["huffman"]["tasks"]
        assert tasks["output_pred"]["answer"] == tasks["output_pred_inv"]["answer"] == release_output("huffman", x)
        assert tasks["input_pred"]["answer"] == tasks["input_pred_inv"]["answer"] == x
