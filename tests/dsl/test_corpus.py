"""The corpus generator: deduplication semantics, determinism, exclusion, resumption, sharding, dataset format."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from dsl import parse_program, program_bits, render_program, run_program, sample_program
from dsl.blocks import item_seed
from dsl.corpus import CorpusError, CorpusRequest, generate_corpus, merge_corpus
from dsl.dataset_io import read_exclusions
from dsl.selection import Target, select


def _request(output: Path, **overrides) -> CorpusRequest:
    options = {"output": output, "seed": 7, "target": Target(pairs=1500), "progress": False}
    options.update(overrides)
    return CorpusRequest(**options)


def _rows(directory: Path) -> list[dict]:
    files = sorted((directory / "data").glob("*.parquet"))
    return [row for f in files for row in pq.read_table(f).to_pylist()]


def _data_bytes(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((directory / "data").glob("*.parquet"))}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("corpus")
    generate_corpus(_request(output))
    return output


def test_rows_are_unique_valid_and_consistent(corpus: Path) -> None:
    rows = _rows(corpus)
    assert len(rows) == 1500
    assert len({tuple(r["sequence"]) for r in rows}) == 1500
    assert len({r["id"] for r in rows}) == 1500
    for row in rows:
        program = parse_program(row["program"])
        assert run_program(program) == row["sequence"]
        assert row["bits"] == program_bits(row["program"])
        assert row["num_lines"] == len(row["program"].splitlines())
        assert row["length"] == len(row["sequence"])
        assert all(0 <= v <= 255 for v in row["sequence"])


def test_each_sequence_keeps_its_shortest_program_in_stream_order(corpus: Path) -> None:
    """Rebuild the candidate stream and check the selection rule against a plain-Python reference."""
    manifest = json.loads((corpus / "generation.json").read_text())
    scanned = manifest["candidates"]
    best: dict[tuple[int, ...], tuple[float, str]] = {}
    first_seen: list[tuple[int, ...]] = []
    for index in range(scanned):
        program, values = sample_program(random.Random(item_seed("train", 7, index)))
        key, candidate = tuple(values), (program_bits(program), render_program(program))
        if key not in best:
            first_seen.append(key)
            best[key] = candidate
        else:
            best[key] = min(best[key], candidate)
    rows = _rows(corpus)
    assert [tuple(r["sequence"]) for r in rows] == first_seen
    assert [(r["bits"], r["program"]) for r in rows] == [best[k] for k in first_seen]
    assert manifest["duplicates"] == scanned - len(rows)


def test_output_does_not_depend_on_worker_count(corpus: Path, tmp_path: Path) -> None:
    generate_corpus(_request(tmp_path, workers=2))
    assert _data_bytes(tmp_path) == _data_bytes(corpus)
    assert (tmp_path / "README.md").read_text() == (corpus / "README.md").read_text()


def test_rerun_is_a_no_op_and_other_settings_are_refused(corpus: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in (corpus / "data").iterdir()}
    generate_corpus(_request(corpus))
    assert {p: p.stat().st_mtime_ns for p in (corpus / "data").iterdir()} == before
    with pytest.raises(CorpusError, match=r"other settings \(block_key, seed\).*--overwrite"):
        generate_corpus(_request(corpus, seed=8))


def test_overwrite_starts_a_corpus_with_other_settings_afresh(corpus: Path, tmp_path: Path) -> None:
    generate_corpus(_request(tmp_path))
    (tmp_path / "notes.txt").write_text("mine")
    manifest = generate_corpus(_request(tmp_path, seed=8, overwrite=True))
    assert manifest is not None and manifest["settings"]["seed"] == 8
    fresh = tmp_path / "fresh"
    generate_corpus(_request(fresh, seed=8))
    assert _data_bytes(tmp_path) == _data_bytes(fresh)
    assert (tmp_path / "notes.txt").read_text() == "mine"  # only the corpus's own files were replaced


def test_excluded_sequences_never_appear(corpus: Path, tmp_path: Path) -> None:
    exclude = read_exclusions([corpus])
    manifest = generate_corpus(_request(tmp_path, target=Target(pairs=2000), exclude=exclude))
    assert manifest is not None and manifest["excluded"] >= 1500  # the same stream: its first 1500 are all excluded
    mine = {tuple(r["sequence"]) for r in _rows(tmp_path)}
    theirs = {tuple(r["sequence"]) for r in _rows(corpus)}
    assert len(mine) == 2000 and not mine & theirs


def test_exclusions_read_jsonl_and_official_csv(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(json.dumps({"sequence": [1, 2, 3]}) + "\n")
    (tmp_path / "b.csv").write_text('program,sequence\n"x","[4, 5]"\n')
    assert read_exclusions([tmp_path / "a.jsonl", tmp_path / "b.csv"]).shape == (2, 2)
    with pytest.raises(FileNotFoundError):
        read_exclusions([tmp_path / "missing"])


def test_eval_set_reaches_the_byte_target_minimally(tmp_path: Path) -> None:
    manifest = generate_corpus(_request(tmp_path, target=Target(bytes=30_000), stream="eval"))
    lengths = [r["length"] for r in _rows(tmp_path)]
    assert sum(lengths) >= 30_000 > sum(lengths[:-1])
    assert manifest is not None and manifest["stats"]["total_bytes"] == sum(lengths)


def test_shard_runs_merge_into_the_single_run_output(corpus: Path, tmp_path: Path) -> None:
    for shard in range(2):
        assert generate_corpus(_request(tmp_path / f"m{shard}", num_shards=2, shard_index=shard)) is None
    merge_corpus(tmp_path / "merged", [tmp_path / "m0", tmp_path / "m1"], progress=False)
    assert _data_bytes(tmp_path / "merged") == _data_bytes(corpus)


def test_huggingface_datasets_loads_the_directory(corpus: Path) -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.load_dataset(str(corpus), split="train")
    assert len(ds) == 1500
    assert set(ds.column_names) == {"id", "program", "sequence", "bits", "num_lines", "length"}
    assert ds[0]["sequence"] == _rows(corpus)[0]["sequence"]


def test_selection_breaks_bit_ties_by_text_and_stops_at_the_target() -> None:
    keys = np.array([[1, 1], [2, 2], [1, 1], [3, 3], [2, 2]], dtype=np.uint64)
    bits = np.array([5.0, 4.0, 5.0, 1.0, 3.0])
    lengths = np.array([10, 20, 10, 30, 20])
    texts = {0: "b", 2: "a"}

    def text_of(indices: np.ndarray) -> list[str]:
        return [texts[int(i)] for i in indices]

    selection = select(keys, bits, lengths, text_of, Target(pairs=3))
    # candidates 0 and 2 tie on bits: text "a" wins; candidate 4 (fewer bits) comes after the prefix
    assert selection.rows is not None and selection.rows.tolist() == [2, 1, 3]
    assert selection.candidates == 4
    exact = select(keys, bits, lengths, text_of, Target(bytes=30))
    assert exact.rows is not None and exact.rows.tolist() == [0, 1]
    over = select(keys, bits, lengths, text_of, Target(bytes=31))
    assert over.rows is not None and over.rows.tolist() == [2, 1, 3]
    short = select(keys, bits, lengths, lambda idx: ["" for _ in idx], Target(pairs=4))
    assert short.rows is None and short.distinct == 3


@pytest.mark.slow
def test_a_killed_run_restarts_to_identical_output(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "kt_train.cli", "dsl", "generate", "--num-pairs", "40000", "--seed", "3"]
    command += ["--workers", "1", "--quiet"]
    clean = subprocess.run([*command, "--output", str(tmp_path / "clean")], capture_output=True, text=True)
    assert clean.returncode == 0, clean.stderr
    killed = tmp_path / "killed"
    process = subprocess.Popen([*command, "--output", str(killed)], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(killed.glob(".blocks/*/block-000001.arrow")) and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (killed / "generation.json").exists()
    resumed = subprocess.run([*command, "--output", str(killed)], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert _data_bytes(killed) == _data_bytes(tmp_path / "clean")
