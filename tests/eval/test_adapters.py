"""Base vs adapters on held-out RTCE inputs: item choice, scoring, and a real (tiny) run that resumes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.adapters import EvalItem, answers_for, compare_adapters, default_backend, held_out_items, score
from kt_train.generation import SamplingConfig
from kt_train.models import DEFAULT_MODEL, get_model
from tracegen.benchmark import build_benchmark


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench")
    build_benchmark(path, seed=42, num_inputs=6, progress=False)
    return path


def test_held_out_items(benchmark: Path) -> None:
    corpus = json.loads((benchmark / "rtce.json").read_text())
    ids = [corpus[1]["id"], corpus[4]["id"]]
    items = held_out_items(benchmark, ids, ["rle", "lzw"], tasks=["output_pred", "input_pred"])
    assert {i.item_id for i in items} == set(ids)
    assert len(items) == 2 * 2 * 2
    first = next(i for i in items if i.algorithm == "rle" and i.task == "output_pred")
    entry = next(c for c in corpus if c["id"] == first.item_id)["algorithms"]["rle"]["tasks"]["output_pred"]
    assert (first.prompt, first.answer) == (entry["prompt"], entry["answer"])
    assert len(held_out_items(benchmark, None, ["rle"], per_algorithm=3)) == 3
    ae = held_out_items(benchmark, None, ["ae"])
    unsure = {c["id"] for c in corpus if not c["algorithms"]["ae"]["roundtrip_ok"]}
    assert not unsure & {i.item_id for i in ae}  # float AE items that do not round-trip are never scored
    with pytest.raises(FileNotFoundError):
        held_out_items(benchmark / "missing", None, ["rle"])


def test_score_and_routing() -> None:
    item = EvalItem("x/rle/output_pred", "x", "rle", "output_pred", "prompt", [["a", 3]])
    assert score(item, 'Reasoning...\n[ANSWER]{"output": [["a", 3]]}[/ANSWER]')["exact_match"] is True
    wrong = score(item, '[ANSWER]{"output": [["a", 4]]}[/ANSWER]')
    assert wrong["exact_match"] is False and 0 < wrong["edit_similarity"] < 1
    assert score(item, "no answer at all") == {
        "found": False, "prediction": None, "exact_match": False, "edit_similarity": 0.0
    }  # fmt: skip
    assert score(item, None)["found"] is False
    other = EvalItem("x/lzw/output_pred", "x", "lzw", "output_pred", "prompt", [1])
    assert answers_for("base", [item, other]) == [item, other]
    assert answers_for("rle", [item, other]) == [item]
    assert answers_for("my-adapter", [item, other]) == [item, other]


def test_compare_adapters_real_model_resumes(benchmark: Path, tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model

    adapter = tmp_path / "rle-adapter"
    get_peft_model(get_model(DEFAULT_MODEL), LoraConfig(r=4, target_modules="all-linear")).save_pretrained(adapter)
    items = held_out_items(benchmark, None, ["rle"], per_algorithm=2)
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=6, stop=["[/ANSWER]"])
    loads: list[str | None] = []

    def counting_backend(model: str, adapter_dir: str | None):  # the real backend, counted
        loads.append(adapter_dir)
        return default_backend(model, adapter_dir)

    out = tmp_path / "eval"
    summary = compare_adapters(DEFAULT_MODEL, {"rle": str(adapter)}, items, out, sampling,
                               backend_factory=counting_backend, progress=False)  # fmt: skip
    assert loads == [None, str(adapter)]
    cells = [(r["model"], r["algorithm"], r["n"]) for r in summary["results"]]
    assert cells == [("base", "rle", 2), ("rle", "rle", 2)]
    rows = [json.loads(line) for line in (out / "rle.predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(isinstance(r["completion"], str) for r in rows)
    assert "| rle | base | 2 |" in (out / "report.md").read_text()
    again = compare_adapters(DEFAULT_MODEL, {"rle": str(adapter)}, items, out, sampling,
                             backend_factory=counting_backend, progress=False)  # fmt: skip
    assert loads == [None, str(adapter)]  # nothing regenerated
    assert again == summary
