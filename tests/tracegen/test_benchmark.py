"""Building the RTCE benchmark: files, determinism and loading with `datasets`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tracegen.algorithms import PromptFacts
from tracegen.benchmark import HF_COLUMNS, build_benchmark
from tracegen.tasks import TASKS, safe_decode

ALGORITHM_NAMES = ["lzw", "ae", "rle", "huffman"]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    pytest.importorskip("tracegen.algorithms")
    out = tmp_path_factory.mktemp("rtce30")
    return out, build_benchmark(out, seed=42, num_inputs=30, progress=False)


def test_writes_all_files(small) -> None:
    out, summary = small
    assert (out / "rtce.json").is_file() and (out / "summary.json").is_file()
    assert sorted(p.name for p in (out / "raw").iterdir()) == sorted(f"{n}.jsonl" for n in ALGORITHM_NAMES)
    assert list((out / "hf" / "data").glob("*.parquet"))
    assert "\nconfigs:\n- config_name: default\n" in (out / "hf" / "README.md").read_text()
    assert summary["num_items"] == 30 and summary["num_rows"] == 30 * 4 * 4
    assert set(summary["algorithms"]) == set(ALGORITHM_NAMES)
    assert sum(summary["families"].values()) == 30 and len(summary["families"]) == 5
    assert set(summary["roundtrip_failures"]) == set(ALGORITHM_NAMES)
    assert json.loads((out / "summary.json").read_text()) == summary


def test_corpus_contents(small) -> None:
    from tracegen.algorithms import ALGORITHMS

    out, summary = small
    corpus = json.loads((out / "rtce.json").read_text())
    assert len(corpus) == 30 and len({e["input"] for e in corpus}) == 30
    for entry in corpus:
        assert {"id", "family", "category", "input"} <= set(entry)
        for name, alg in ALGORITHMS.items():
            per_alg = entry["algorithms"][name]
            x = entry["input"]
            assert per_alg["freq"] == alg.freq(x)
            assert per_alg["z"] == alg.to_json(alg.encode(x))
            assert per_alg["roundtrip_ok"] == (safe_decode(alg, alg.encode(x), alg.freq(x)) == x)
            assert set(per_alg["tasks"]) == {t.value for t in TASKS}
            assert per_alg["tasks"]["output_pred"]["answer"] == per_alg["z"]
            assert per_alg["tasks"]["input_pred_inv"]["answer"] == x
    failures = {n: sum(not e["algorithms"][n]["roundtrip_ok"] for e in corpus) for n in ALGORITHM_NAMES}
    assert failures == summary["roundtrip_failures"]
    assert failures["lzw"] == failures["rle"] == failures["huffman"] == 0


def test_raw_files(small) -> None:
    out, _ = small
    corpus = json.loads((out / "rtce.json").read_text())
    for name in ALGORITHM_NAMES:
        lines = (out / "raw" / f"{name}.jsonl").read_text().splitlines()
        rows = [json.loads(line) for line in lines]
        assert [r["id"] for r in rows] == [e["id"] for e in corpus]
        assert all(set(r) == {"id", "input", "z", "freq"} for r in rows)
        assert rows[0]["z"] == corpus[0]["algorithms"][name]["z"]


def test_byte_identical_across_runs(small, tmp_path: Path) -> None:
    out, _ = small
    build_benchmark(tmp_path, seed=42, num_inputs=30, progress=False)
    assert _files(tmp_path) == _files(out)


def test_seed_changes_corpus(small, tmp_path: Path) -> None:
    out, _ = small
    build_benchmark(tmp_path, seed=3, num_inputs=30, progress=False)
    assert (tmp_path / "rtce.json").read_bytes() != (out / "rtce.json").read_bytes()


def test_loads_with_datasets(small, tmp_path: Path, monkeypatch) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out, summary = small
    ds = datasets.load_dataset(str(out / "hf"), split="train", cache_dir=str(tmp_path / "cache"))
    assert ds.column_names == list(HF_COLUMNS)
    assert len(ds) == summary["num_rows"]
    assert len(set(ds["id"])) == len(ds)
    row = ds[0]
    assert row["task"] == "output_pred" and row["prompt"].rstrip().endswith("[/ANSWER]")
    assert os.environ["HF_DATASETS_OFFLINE"] == "1"


def test_full_250(tmp_path: Path) -> None:
    pytest.importorskip("tracegen.algorithms")
    first = build_benchmark(tmp_path / "a", progress=False)
    second = build_benchmark(tmp_path / "b", progress=False)
    assert first == second
    assert first["num_items"] == 250 and first["num_rows"] == 4000
    assert len(first["categories"]) == 56
    assert first["families"] == {"dna": 45, "log": 49, "patterned": 66, "tabular": 45, "yaml": 45}
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


def test_fake_algorithms(tmp_path: Path) -> None:
    class Identity:  # an algorithm states its prompt facts: no generic fallback describes z
        name = "identity"
        needs_freq = False
        prompt = PromptFacts("str", "The same string.", 'str (e.g. "abc")', {"s": "x"})

        def freq(self, text):
            return None

        def encode(self, text):
            return text

        def decode(self, z, freq):
            return z

        def encoder_source(self, freq=None):
            return "def main_solution(s):\n    return s\n"

        decoder_source = encoder_source

        def to_json(self, z):
            return z

        from_json = to_json

    summary = build_benchmark(tmp_path, num_inputs=5, algorithms={"identity": Identity()}, progress=False)
    assert summary["algorithms"] == {"identity": 5} and summary["roundtrip_failures"] == {"identity": 0}
    assert (tmp_path / "raw" / "identity.jsonl").is_file()
