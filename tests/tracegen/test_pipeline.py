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
    for bad in ({"num_inputs": 0}, {"eval_fraction": 1.0}, {"template_max_steps": 1}):
        with pytest.raises(ValueError):
            CorpusSettings(**bad)


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
    sft_items = set(pq.read_table(root / "sft" / "all" / "data").column("item_id").to_pylist())
    assert sft_items and not sft_items & eval_ids
    stamps = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file() and p.name != "settings.json"}
    build_rtce_sft_corpus(tmp_path / "corpus", settings, workers=2, progress=False)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # nothing rebuilt
