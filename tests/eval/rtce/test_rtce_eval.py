"""`kt eval rtce`: items, scoring with pass@k, predictions mode, round trips and a real CPU run that resumes."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest

from eval.rtce.evaluate import (
    SCORED_FILE,
    RTCEEvalConfig,
    default_backend,
    read_predictions,
    run_rtce_eval,
    score_rows,
)
from eval.rtce.generation import ModelSpec
from eval.rtce.items import load_items
from eval.rtce.reflection_job import accuracy_by_round, reflection_markdown
from eval.rtce.repair import needs_repair
from eval.rtce.roundtrip import roundtrip_cases, roundtrip_prompt
from eval.rtce.scoring import score_completions
from kt_train.cli import main
from kt_train.generation import with_retries
from tracegen.algorithms import get_algorithm
from tracegen.benchmark import build_benchmark


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench")
    build_benchmark(path, seed=42, num_inputs=6, progress=False)
    return path


def answer(value: object) -> str:
    return f"Let me think.\n[ANSWER]\n{json.dumps({'output': value})}\n[/ANSWER]"


def test_items_carry_their_input_and_metadata(benchmark: Path) -> None:
    items = load_items(benchmark, ["rle"], ["output_pred", "input_pred"], limit=2)
    assert len(items) == 4 and {i.task for i in items} == {"output_pred", "input_pred"}
    corpus = {e["id"]: e for e in json.loads((benchmark / "rtce.json").read_text())}
    for item in items:
        entry = corpus[item.item_id]
        assert item.x == entry["input"] and item.input_length == len(entry["input"])
        assert (
            item.category == entry["category"]
            and item.answer == entry["algorithms"]["rle"]["tasks"][item.task]["answer"]
        )
    with pytest.raises(ValueError, match="unknown"):
        load_items(benchmark, ["zip"])


def test_pass_at_k_against_the_combinatorial_formula() -> None:
    texts = [answer(3), "no answer", answer(4), answer(3), None, answer(3), answer(2)]
    scores = score_completions(texts, 3)
    assert scores["em"] == [True, False, False, True, False, True, False]
    assert scores["found"] == [True, False, True, True, False, True, True]
    n, c = 7, 3
    assert scores["pass@1"] == pytest.approx(c / n)
    assert scores["pass@5"] == pytest.approx(1 - comb(n - c, 5) / comb(n, 5))
    assert scores["any@5"] is True
    short = score_completions([answer(1), answer(3)], 3)
    assert short["pass@5"] is None and short["any@5"] is None and short["pass@1"] == 0.5
    assert score_completions([], 3)["pass@1"] == 0.0


def test_with_retries_backs_off_then_gives_up() -> None:
    calls = []

    def flaky(x: int) -> int:
        calls.append(x)
        if len(calls) < 3:
            raise ConnectionError("server restarting")
        return x * 2

    assert with_retries(flaky, 21, retries=2, backoff_s=0.01) == 42 and len(calls) == 3
    calls.clear()
    with pytest.raises(ConnectionError):
        with_retries(flaky, 1, retries=1, backoff_s=0.01)


def test_predictions_are_scored_and_round_trip_cases_built(benchmark: Path, tmp_path: Path) -> None:
    items = {i.id: i for i in load_items(benchmark, ["rle"], ["output_pred", "input_pred"], limit=2)}
    rows = [{"id": key, "completions": [answer(item.answer), "garbage"]} for key, item in items.items()]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    scored = score_rows(read_predictions(path, items), items)
    assert all(r["em"] == [True, False] and r["pass@1"] == 0.5 for r in scored)
    cases = roundtrip_cases(scored, items)
    assert len(cases) == 2 and all(c["op_pass"] and c["ip_pass"] and c["z_hat_found"] for c in cases)
    case = cases[0]
    item = items[case["item"]]
    assert case["z_hat"] == items[f"{item.item_id}/rle/output_pred"].answer  # the model's own z
    prompt = roundtrip_prompt(item, case["z_hat"])
    assert prompt == item.prompt  # the model's z is the true z here, so the second call is the I/P Pred prompt
    assert get_algorithm("rle").decode(get_algorithm("rle").encode(item.x)) == item.x
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1\n', encoding="utf-8")
    with pytest.raises(ValueError, match="not a row"):
        read_predictions(bad, items)


def test_needs_repair() -> None:
    assert needs_repair("The answer is 5.") and needs_repair('{"result": 5}')
    assert not needs_repair(answer(5)) and not needs_repair("") and not needs_repair(None) and not needs_repair("  ")


def test_reflection_accuracy_by_round() -> None:
    def record(task: str, ems: list[bool]) -> dict:
        rounds = [{"em": em} for em in ems]
        return {"model": "base", "temperature": 0.2, "algorithm": "rle", "task": task, "rounds": rounds}

    records = [
        record("output_pred", [False, True]),
        record("output_pred", [False, False, False]),
        record("output_pred", [True]),
    ]
    table = accuracy_by_round(records, rounds=2)
    assert table == [
        {
            "model": "base",
            "temperature": 0.2,
            "algorithm": "rle",
            "task": "output_pred",
            "n": 3,
            "em_by_round": [pytest.approx(1 / 3), pytest.approx(2 / 3), pytest.approx(2 / 3)],
        }
    ]
    markdown = reflection_markdown(table, rounds=2)
    assert "| base | 0.2 | rle | output_pred | 3 | 33.3 | 66.7 | 66.7 |" in markdown


def test_cli_errors_are_one_line(benchmark: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["eval", "rtce", "--benchmark", str(benchmark), "--output", str(tmp_path / "o")]
    for argv in (
        [*base, "--predictions", str(tmp_path / "missing.jsonl")],
        [*base, "--model", "smollm2-135m-instruct", "--adapter", f"x={tmp_path}"],
        [*base, "--model", "smollm2-135m-instruct", "--adapter", "nolabel"],
        ["eval", "rtce", "--benchmark", str(tmp_path), "--output", "o", "--predictions", "p"],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("kt: error:"), (argv, err)


@pytest.mark.slow
def test_cpu_run_with_the_embedded_model_writes_every_artifact_and_resumes(benchmark: Path, tmp_path: Path) -> None:
    loads: list[str] = []

    def counting(spec: ModelSpec, config: RTCEEvalConfig):  # the real backend; counts model loads
        loads.append(spec.label)
        return default_backend(spec, config)

    out = tmp_path / "rtce"
    config = RTCEEvalConfig(
        benchmark=str(benchmark),
        output=str(out),
        model="smollm2-135m-instruct",
        algorithms=["rle"],
        tasks=["output_pred", "input_pred"],
        items=1,
        temperatures=[0.8],
        n=2,
        max_new_tokens=48,
        batch_size=2,
        reflection_rounds=1,
        reflection_gen_tokens=24,
        format_repair=True,
    )
    summary = run_rtce_eval(config, factory=counting, progress=False)
    assert loads == ["base"]
    scored = [json.loads(line) for line in (out / SCORED_FILE).read_text().splitlines()]
    assert len(scored) == 2 and all(len(r["completions"]) == 2 for r in scored)
    assert all(r["temperature"] == 0.8 and r["top_p"] == 0.95 and r["seed"] == 42 for r in scored)
    trips = [json.loads(line) for line in (out / "base.roundtrips.jsonl").read_text().splitlines()]
    assert len(trips) == 1 and isinstance(trips[0]["roundtrip_pass"], bool)
    for name in ("summary.json", "report.md"):
        assert (out / name).stat().st_size > 0
    reflections = [json.loads(line) for line in (out / "base.reflection.jsonl").read_text().splitlines()]
    assert len(reflections) == 2 and all(r["rounds"][0]["draft"] is not None for r in reflections)
    assert [len(r["em_by_round"]) for r in summary["reflection"]] == [2, 2]
    assert "## Self-reflection" in (out / "report.md").read_text()
    repairs = [json.loads(line) for line in (out / "base.repairs.jsonl").read_text().splitlines()]
    assert len(repairs) == 2 and all(len(r["repairs"]) == 2 for r in repairs)
    for row in scored:  # a repaired completion is scored in place of the raw one, which is kept
        for raw, text, fix in zip(row["raw_completions"], row["completions"], row["repaired"], strict=True):
            assert text == (fix if fix is not None else raw)
            assert fix is None or needs_repair(raw)
    assert list(out.glob("*.png"))
    again = run_rtce_eval(config, factory=counting, progress=False)  # everything on disk: no model is loaded
    assert loads == ["base"] and json.dumps(again, sort_keys=True) == json.dumps(summary, sort_keys=True)


@pytest.mark.slow
def test_an_algorithm_adapter_answers_its_own_prompts_beside_the_base_model(benchmark: Path, tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model

    from kt_train.models import DEFAULT_MODEL, get_model

    adapter = tmp_path / "rle-adapter"
    get_peft_model(get_model(DEFAULT_MODEL), LoraConfig(r=4, target_modules="all-linear")).save_pretrained(adapter)
    loads: list[str | None] = []

    def counting(spec: ModelSpec, config: RTCEEvalConfig):  # the real backend; counts model loads
        loads.append(spec.adapter)
        return default_backend(spec, config)

    out = tmp_path / "eval"
    config = RTCEEvalConfig(
        benchmark=str(benchmark),
        output=str(out),
        model=DEFAULT_MODEL,
        adapters={"rle": str(adapter), "rle@1": str(adapter)},
        adapter_steps={"rle": 2, "rle@1": 1},
        algorithms=["rle", "lzw"],
        tasks=["output_pred"],
        items=1,
        temperatures=[0.0],
        n=1,
        max_new_tokens=6,
        roundtrip=False,
    )
    summary = run_rtce_eval(config, factory=counting, progress=False)
    assert loads == [None, str(adapter), str(adapter)]
    cells = sorted((r["model"], r["algorithm"]) for r in summary["aggregated"])
    assert cells == [("base", "lzw"), ("base", "rle"), ("rle", "rle"), ("rle@1", "rle")]  # rle's and its checkpoint's
    rows = [json.loads(line) for line in (out / "rle.completions.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["adapter"] == str(adapter)
    # the learning table of this tiny run: the adapter (not its checkpoint) against the base, paired on 1 item
    learning = summary["learning"]
    assert [(e["model"], e["algorithm"], e["task"], e["metric"]) for e in learning] == [
        ("rle", "rle", "output_pred", "em"),
        ("rle", "rle", "output_pred", "es"),
    ]
    for entry in learning:
        assert entry["n"] == 1 and entry["few_items"] and entry["diff"] == entry["adapter"] - entry["base"]
        assert entry["ci_low"] == entry["ci_high"] == entry["diff"]  # one item: no spread
    assert [(p["model"], p["step"]) for p in summary["by_step"]] == [("base", 0), ("rle@1", 1), ("rle", 2)]
    report = (out / "report.md").read_text()
    assert report.split("\n## ", 1)[1].startswith("Did training help?") and "too few to tell" in report
    assert (out / "heldout_vs_step.png").is_file()
    assert run_rtce_eval(config, factory=counting, progress=False) == summary and len(loads) == 3


def test_a_rerun_with_other_settings_is_refused_and_overwrite_starts_afresh(
    benchmark: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = load_items(benchmark, ["rle"], ["output_pred"], limit=2)
    rows = [{"id": item.id, "completions": [answer(item.answer)]} for item in items]
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    base = [
        "eval",
        "rtce",
        "--benchmark",
        str(benchmark),
        "--output",
        str(out),
        "--predictions",
        str(predictions),
        "--algorithms",
        "rle",
        "--tasks",
        "output_pred",
        "--items",
        "2",
    ]
    assert main(base) == 0
    scored = (out / SCORED_FILE).read_bytes()
    capsys.readouterr()
    assert main([*base, "--n", "3", "--max-new-tokens", "64"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "other settings (max_new_tokens, n)" in err[0] and "--overwrite" in err[0]
    assert (out / SCORED_FILE).read_bytes() == scored
    assert main([*base, "--n", "3", "--max-new-tokens", "64", "--overwrite"]) == 0
    assert json.loads((out / "summary.json").read_text())["settings"]["n"] == 3
