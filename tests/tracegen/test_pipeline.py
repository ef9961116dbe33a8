"""The default RTCE SFT corpus pipeline: held-out ids, a small real build, and the cache hit."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tracegen.pipeline import EVAL_IDS_FILE, CorpusSettings, build_rtce_sft_corpus, choose_eval_ids


def _items(per_category: dict[str, int]) -> list[dict[str, str]]:
    return [{"id": f"{c}-{i}", "category": c} for c, n in per_category.items() for i in range(n)]


def test_choose_eval_ids_spreads_over_categories() -> None:
    items = _items({"a": 10, "b": 10, "c": 5})
    chosen = choose_eval_ids(items, 0.2, seed=42)
    assert len(chosen) == 5
    assert {i.split("-")[0] for i in chosen} == {"a", "b", "c"}
    assert chosen == choose_eval_ids(items, 0.2, seed=42)
    assert chosen != choose_eval_ids(items, 0.2, seed=7)
    assert choose_eval_ids(_items({"x": 1, "y": 1}), 0.2, seed=42) == []  # never everything
    assert choose_eval_ids(items, 0.0, seed=42) == []


def test_settings_are_validated_and_keyed() -> None:
    assert CorpusSettings().key() == CorpusSettings().key()
    assert CorpusSettings(template_max_steps=6).key() != CorpusSettings().key()
    # the short-input and answer-only keys are new; at their off defaults a corpus cached before them is reused
    assert CorpusSettings().key() == "rtce-sft-seed42-n250-9237717489"
    assert CorpusSettings(input_lengths=(4, 16)).key() != CorpusSettings().key()
    assert CorpusSettings(completions="answer").key() != CorpusSettings().key()
    bad_values = ({"input_lengths": (9, 4)}, {"completions": "traces"})
    for bad in ({"num_inputs": 0}, {"eval_fraction": 1.0}, {"template_max_steps": 1}, *bad_values):
        with pytest.raises(ValueError):
            CorpusSettings(**bad)


@pytest.mark.slow
def test_small_build_then_cache_hit(tmp_path: Path) -> None:
    settings = CorpusSettings(seed=42, num_inputs=10, eval_fraction=0.3, template_max_steps=4)
    root = build_rtce_sft_corpus(tmp_path / "corpus", settings, workers=2, progress=False)
    eval_ids = set(json.loads((root / EVAL_IDS_FILE).read_text()))
    assert len(eval_ids) == 3
    summary = json.loads((root / "sft" / "summary.json").read_text())
    assert summary["rows"] > 0 and summary["dropped"]["held_out"] > 0
    train_ids = set()
    for line in (root / "translations" / "translations.jsonl").read_text().splitlines():
        train_ids.add(json.loads(line)["item_id"])
    assert eval_ids <= train_ids  # they were traced, then held out of the SFT data
    data = root / "sft" / "all" / "data"
    sft_items = set(pq.read_table(data / "train-00000-of-00001.parquet").column("item_id").to_pylist())
    assert sft_items and not sft_items & eval_ids
    assert set(pq.read_table(data / "test-00000-of-00001.parquet").column("item_id").to_pylist()) == eval_ids
    stamps = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file() and p.name != "settings.json"}
    build_rtce_sft_corpus(tmp_path / "corpus", settings, workers=2, progress=False)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # nothing rebuilt


def test_short_inputs_held_out_by_text(tmp_path: Path) -> None:
    """A short-input, answer-only corpus: no training row shows a held-out input or its encoding (inputs are unique
    texts, and the held-out items' rows are the `test` split only)."""
    settings = CorpusSettings(
        seed=3,
        num_inputs=24,
        eval_fraction=0.25,
        template_max_steps=4,
        prompt_style="demo",
        input_lengths=(4, 8),
        completions="answer",
    )
    root = build_rtce_sft_corpus(tmp_path / "corpus", settings, workers=2, progress=False)
    items = json.loads((root / "benchmark" / "rtce.json").read_text())
    held = set(json.loads((root / EVAL_IDS_FILE).read_text()))
    assert len(held) == 6 and all(4 <= len(item["input"]) <= 8 for item in items)
    queries = {
        json.dumps(item[key], ensure_ascii=False) if key == "input" else json.dumps(item["algorithms"][a]["z"])
        for item in items
        if item["id"] in held
        for a in item["algorithms"]
        for key in ("input", "z")
    }
    train = pq.read_table(root / "sft" / "all" / "data" / "train-00000-of-00001.parquet").to_pylist()
    test = pq.read_table(root / "sft" / "all" / "data" / "test-00000-of-00001.parquet").to_pylist()
    assert train and {row["item_id"] for row in test} == held
    for row in train:
        query = row["messages"][0]["content"].split("Now the actual query.\nInput: ", 1)[1].split("\n", 1)[0]
        assert query not in queries, row["id"]
