"""`kt eval kt` and `kt eval kt-baselines` end to end on real sets (a small synthetic set, a natural text set)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dsl.parser import parse_program
from dsl.program import render_python
from eval.kt.baselines import BaselineConfig, chunks, compute_baselines, gzip_rates
from eval.kt.dataset import DatasetError, load_kt_dataset
from eval.kt.evaluate import COMPLETIONS_FILE, ITEMS_FILE, KTEvalConfig, default_backend, run_kt_eval
from eval.kt.natural import build_natural_dataset
from eval.kt.report import PLOT_FILE, PREFIX_PLOT_FILE, REPORT_FILE, SUMMARY_FILE
from eval.kt.scoring import GzipEncoding, joined_gzip_bits, joint_gzip_precision, sequence_gzip_bits
from kt_train.cli import main
from tests.kt_templates import crt_template
from tests.wandb_records import run_records


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kt") / "evalset"
    assert main(["dsl", "eval-set", "--bytes", "3000", "--seed", "3", "--output", str(out)]) == 0
    return out


def _rows(dataset: Path) -> list[dict]:
    return pq.read_table(next((dataset / "data").glob("*.parquet"))).to_pylist()


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_gold_programs_score_as_the_upper_bound(synthetic: Path, tmp_path: Path) -> None:
    rows = _rows(synthetic)
    predictions = _write(tmp_path / "gold.jsonl", [{"id": r["id"], "completions": [r["program"]]} for r in rows])
    out = tmp_path / "eval"
    code = main(
        [
            "eval",
            "kt",
            "--dataset",
            str(synthetic),
            "--mode",
            "dsl",
            "--predictions",
            str(predictions),
            "--output",
            str(out),
        ]
    )
    assert code == 0
    summary = json.loads((out / SUMMARY_FILE).read_text())
    metrics = summary["metrics"]
    assert metrics["accuracy"] == 1.0 and metrics["executable"] == 1.0
    baselines = compute_baselines(load_kt_dataset(synthetic), BaselineConfig())
    assert metrics["compression_rate"] == pytest.approx(baselines["upper_bound"]["compression_rate"])
    bits = sum(r["bits"] for r in rows)  # the corpus's own uniform-prior bits
    raw = 8 * sum(len(r["sequence"]) for r in rows)
    assert metrics["compression_rate"] == pytest.approx((bits + len(rows)) / raw)
    assert metrics["prefix_accuracy"]["16"] == 1.0
    assert summary["settings"]["dataset_fingerprint"] == load_kt_dataset(synthetic).fingerprint
    items = [json.loads(line) for line in (out / ITEMS_FILE).read_text().splitlines()]
    assert [i["id"] for i in items] == [r["id"] for r in rows]
    assert all(i["verdict"] == "correct" and i["program"] == r["program"] for i, r in zip(items, rows, strict=True))
    report = (out / REPORT_FILE).read_text()
    assert "| 1.000 |" in report and "correct" in report
    assert f"![correct_prefix]({PREFIX_PLOT_FILE})" in report  # the plots shown in the report, not only named
    assert (out / PLOT_FILE).stat().st_size > 1000 and (out / PREFIX_PLOT_FILE).stat().st_size > 1000


def test_python_predictions_with_bad_completions(synthetic: Path, tmp_path: Path) -> None:
    rows = _rows(synthetic)[:6]
    bad = ["I cannot do that.", "```python\noutput = [1, 2,\n```", "while True:\n    pass"]
    predictions = []
    for i, row in enumerate(rows):
        good = f"```python\n{render_python(parse_program(row['program']))}\n```\n###"
        predictions.append({"id": row["id"], "completions": [bad[i] if i < len(bad) else good]})
    predictions.append({"id": rows[3]["id"], "completions": ["output = []"]})  # a second, wrong sample of item 3
    path = _write(tmp_path / "py.jsonl", predictions)
    config = KTEvalConfig(
        dataset=str(synthetic),
        output=str(tmp_path / "out"),
        mode="python",
        predictions=str(path),
        limit=6,
        timeout_s=1.0,
    )
    summary = run_kt_eval(config, progress=False)
    m = summary["metrics"]
    assert m["num_items"] == 6 and m["num_samples"] == 7
    assert m["accuracy"] == pytest.approx(3 / 6)
    assert m["sample_accuracy"] == pytest.approx(3 / 7)
    assert m["verdicts"] == {"correct": 3, "no_code": 1, "syntax_error": 1, "timeout": 1, "wrong_output": 1}
    assert summary["program_prior"] == "gzip"
    assert m["executable"] == pytest.approx(4 / 7) and m["executable_official"] == pytest.approx(3 / 7)  # `[]`: no
    items = {i["id"]: i for i in map(json.loads, (tmp_path / "out" / ITEMS_FILE).read_text().splitlines())}
    correct = [items[r["id"]] for r in rows[3:]]
    programs, sequences = [i["program"] for i in correct], [i["sequence"] for i in correct]
    assert m["precision_joint_gzip"] == joint_gzip_precision(programs, sequences, "latin1-utf8")
    report = (tmp_path / "out" / REPORT_FILE).read_text()
    assert "Precision (joint gzip)" in report and "Executable (release)" in report and "`latin1-utf8`" in report
    item3 = items[rows[3]["id"]]
    assert item3["correct"] and len(item3["samples"]) == 2 and item3["samples"][1]["verdict"] == "wrong_output"
    assert items[rows[0]["id"]]["verdict"] == "no_code"  # prose without code is a recorded verdict


def test_a_lone_surrogate_in_a_completion_is_scored_not_fatal(synthetic: Path, tmp_path: Path) -> None:
    """A model's text may hold a lone surrogate (undecodable bytes): that sample gets its verdict, the records are
    written (JSON escapes) and read back with the same text, and the run goes on."""
    rows = _rows(synthetic)[:3]
    texts = [rows[0]["program"], "\udcff", "sequence_1 = \udcff"]
    path = _write(
        tmp_path / "p.jsonl", [{"id": r["id"], "completions": [t]} for r, t in zip(rows, texts, strict=True)]
    )
    out = tmp_path / "eval"
    argv = ["eval", "kt", "--dataset", str(synthetic), "--mode", "dsl", "--predictions", str(path), "--limit", "3"]
    assert main([*argv, "--output", str(out)]) == 0
    items = [json.loads(line) for line in (out / ITEMS_FILE).read_text(encoding="utf-8").splitlines()]
    assert [i["verdict"] for i in items] == ["correct", "no_code", "syntax_error"]
    assert main([*argv, "--output", str(out)]) == 0  # the rerun resumes from those records


def test_the_crt_template_scores_nothing_where_gold_programs_score(synthetic: Path, tmp_path: Path) -> None:
    """Issue 36: one 4-line Chinese-remainder template per item printed its sequence and "compressed" it better than
    the gold program; under the uniform prior it is now `unencodable` or `resource`, never correct. (Sequences of up
    to 60 values: longer ones need a literal past Python's 4,300 digits, which the parser refuses anyway.)"""
    rows = [r for r in _rows(synthetic) if len(r["sequence"]) <= 60]
    assert len(rows) >= 5
    path = _write(
        tmp_path / "crt.jsonl", [{"id": r["id"], "completions": [crt_template(r["sequence"])]} for r in rows]
    )
    out = tmp_path / "out"
    run_kt_eval(
        KTEvalConfig(dataset=str(synthetic), output=str(out), mode="dsl", predictions=str(path)), progress=False
    )
    items = {i["id"]: i for i in map(json.loads, (out / ITEMS_FILE).read_text().splitlines())}
    for row in rows:
        assert items[row["id"]]["verdict"] in {"unencodable", "resource"}, items[row["id"]]
        assert not items[row["id"]]["correct"]


def test_natural_text_set_compares_mod_256(tmp_path: Path) -> None:
    text = tmp_path / "text.txt"
    text.write_text("abcabcabc", encoding="utf-8")
    dataset = tmp_path / "natural"
    build_natural_dataset("text", [text], dataset, sequence_length=5, max_bytes=100, progress=False)
    loaded = load_kt_dataset(dataset)
    assert loaded.natural and loaded.symbol_bits == 8 and [len(i.sequence) for i in loaded.items] == [5, 4]
    first, second = loaded.items
    predictions = _write(
        tmp_path / "p.jsonl",
        [
            {"id": first.id, "completions": ["output = [ord(c) + 256 for c in 'abcab']"]},  # right mod 256
            {"id": second.id, "completions": ["output = [ord(c) for c in 'cabd']"]},
        ],
    )
    config = KTEvalConfig(
        dataset=str(dataset), output=str(tmp_path / "o"), mode="python", predictions=str(predictions)
    )
    m = run_kt_eval(config, progress=False)["metrics"]
    assert m["accuracy"] == 0.5 and m["mean_correct_prefix"] == pytest.approx((5 + 3) / 2)


def test_bad_inputs_give_one_error_line(synthetic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows(synthetic)
    unknown = _write(tmp_path / "unknown.jsonl", [{"id": "nope", "completions": ["x"]}])
    torn = tmp_path / "torn.jsonl"
    torn.write_text(json.dumps({"id": rows[0]["id"], "completions": ["x"]}) + '\n{"id": ', encoding="utf-8")
    base = ["eval", "kt", "--dataset", str(synthetic), "--mode", "dsl", "--output", str(tmp_path / "o")]
    cases = [
        [*base, "--predictions", str(unknown)],
        [*base, "--predictions", str(torn)],
        [*base, "--predictions", str(tmp_path / "missing.jsonl")],
        ["eval", "kt", "--dataset", str(tmp_path), "--mode", "dsl", "--predictions", str(unknown), "--output", "x"],
        [*base, "--predictions", str(unknown), "--prompt", "cot"],
        [*base, "--model", "smollm2-135m-instruct", "--adapter", str(tmp_path)],
        [*base, "--model", "smollm2-135m-instruct", "--num-samples", "4"],
        ["eval", "kt-baselines", "--dataset", str(tmp_path / "nothing"), "--output", str(tmp_path / "b")],
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("kt: error:"), (argv, err)
    old_form = _write(tmp_path / "old.jsonl", [{"id": rows[0]["id"], "completion": rows[0]["program"]}])
    argv = [*base[:-1], str(tmp_path / "old"), "--predictions", str(old_form)]
    assert main(argv) == 2  # KT's old field: refused, never taken as no sample
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "old.jsonl:1: `completion` is the old form" in err[0], err


def test_a_rerun_with_other_settings_is_refused(synthetic: Path, tmp_path: Path) -> None:
    rows = _rows(synthetic)
    path = _write(tmp_path / "p.jsonl", [{"id": rows[0]["id"], "completions": [rows[0]["program"]]}])
    out = str(tmp_path / "out")
    run_kt_eval(KTEvalConfig(dataset=str(synthetic), output=out, mode="dsl", predictions=str(path)), progress=False)
    again = KTEvalConfig(dataset=str(synthetic), output=out, mode="dsl", predictions=str(path), limit=1)
    with pytest.raises(ValueError, match="other settings"):
        run_kt_eval(again, progress=False)


def test_a_run_scored_with_the_old_default_encoding_is_not_resumed_with_the_new_one(
    synthetic: Path, tmp_path: Path
) -> None:
    """Issue 37, item 5: the default gzip input changed (`bytes` -> `latin1-utf8`); a run recorded under the old one
    is refused by a rerun with the default, never mixed into it."""
    rows = _rows(synthetic)
    path = _write(tmp_path / "p.jsonl", [{"id": rows[0]["id"], "completions": [rows[0]["program"]]}])
    out = str(tmp_path / "out")
    old = KTEvalConfig(dataset=str(synthetic), output=out, predictions=str(path), gzip_encoding="bytes")
    run_kt_eval(old, progress=False)
    with pytest.raises(ValueError, match=r"other settings \(gzip_encoding\)"):
        run_kt_eval(KTEvalConfig(dataset=str(synthetic), output=out, predictions=str(path)), progress=False)


def test_plots_are_headed_by_model_set_and_n(synthetic: Path, tmp_path: Path) -> None:
    """The KT plots named neither the model nor the set nor n (per plot or per length bucket)."""
    from eval.kt.plots import caption, length_figure, prefix_figure
    from eval.plotting import texts

    rows = _rows(synthetic)[:6]
    predictions = _write(tmp_path / "p.jsonl", [{"id": r["id"], "completions": [r["program"]]} for r in rows[:4]])
    out = tmp_path / "eval"
    config = KTEvalConfig(dataset=str(synthetic), output=str(out), mode="dsl", predictions=str(predictions), limit=6)
    summary = run_kt_eval(config, progress=False)
    items = [json.loads(line) for line in (out / ITEMS_FILE).read_text().splitlines()]
    text = caption(summary["settings"], summary["modality"], len(items))
    assert text == f"predictions p.jsonl · set {synthetic.name} (synthetic) · dsl mode · n = 6 sequences"
    model = caption({"model": "m", "adapter": "/runs/lora-7", "dataset": "/d/set", "mode": "python"}, "text", 1)
    assert model == "m + adapter lora-7 · set set (text) · python mode · n = 1 sequence"
    length = length_figure(summary["metrics"], text)
    assert length.get_suptitle() == f"KT: CompressionRate and Accuracy by sequence length\n{text}"
    buckets = summary["metrics"]["by_length"]
    assert sum(b["n"] for b in buckets) == 6 and f"{buckets[0]['bucket']}\n(n={buckets[0]['n']})" in texts(length)
    prefix = prefix_figure(items, text)
    assert text in prefix.get_suptitle()
    assert {"wrong or no program (2)", "correct program (4)"} <= set(texts(prefix))  # 2 of 6 had no completion


def test_baselines_by_hand(synthetic: Path, tmp_path: Path) -> None:
    sequences = [tuple(r["sequence"]) for r in _rows(synthetic)]
    raw = 8 * sum(map(len, sequences))
    encodings: tuple[GzipEncoding, ...] = ("bytes", "latin1-utf8")
    for encoding in encodings:
        rates = gzip_rates(sequences, 8, encoding)
        per_sequence = [sequence_gzip_bits(s, encoding) for s in sequences]
        assert rates["per_sequence"] == pytest.approx(sum(per_sequence) / raw)
        assert rates["whole_set"] == pytest.approx(joined_gzip_bits(sequences, encoding) / raw)
        expected_backoff = sum(1 + min(bits, 8 * len(s)) for bits, s in zip(per_sequence, sequences)) / raw
        assert rates["per_sequence_or_raw"] == pytest.approx(expected_backoff)
    assert chunks([(1, 2, 3), (4,)], 2) == [(1, 2), (3,), (4,)]
    assert main(["eval", "kt-baselines", "--dataset", str(synthetic), "--output", str(tmp_path / "b")]) == 0
    result = json.loads((tmp_path / "b" / SUMMARY_FILE).read_text())
    assert result["upper_bound"]["accuracy"] == 1.0
    assert result["upper_bound"]["compression_rate"] < result["gzip"]["per_sequence"]
    assert "Upper Bound" in (tmp_path / "b" / REPORT_FILE).read_text()


def test_baselines_write_the_file_names_of_every_evaluation(
    synthetic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kt-baselines wrote baselines.json / .md where the other evaluations write summary.json / report.md."""
    out = tmp_path / "b"
    out.mkdir()
    (out / "baselines.json").write_text("{}")  # what an older version left: replaced, not kept beside
    (out / "baselines.md").write_text("# old")
    command = ["eval", "kt-baselines", "--dataset", str(synthetic), "--output", str(out), "--limit", "5"]
    assert main(command) == 0
    assert sorted(p.name for p in out.iterdir()) == [REPORT_FILE, SUMMARY_FILE]
    assert json.loads((out / SUMMARY_FILE).read_text())["num_sequences"] == 5
    assert main(command) == 0  # its own summary is overwritten
    rows = _rows(synthetic)[:3]
    predictions = _write(tmp_path / "p.jsonl", [{"id": r["id"], "completions": [r["program"]]} for r in rows])
    run = tmp_path / "run"
    assert (
        main(
            [
                "eval",
                "kt",
                "--dataset",
                str(synthetic),
                "--predictions",
                str(predictions),
                "--limit",
                "3",
                "--output",
                str(run),
            ]
        )
        == 0
    )
    before = (run / SUMMARY_FILE).read_text()
    capsys.readouterr()
    assert main(["eval", "kt-baselines", "--dataset", str(synthetic), "--output", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another evaluation's run" in err[0], err
    assert (run / SUMMARY_FILE).read_text() == before  # an evaluation's summary is never overwritten


def test_not_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no data"):
        load_kt_dataset(tmp_path)


@pytest.mark.slow
def test_generation_with_the_embedded_model_is_resumable(synthetic: Path, tmp_path: Path) -> None:
    calls: list[str] = []

    def counting_backend(config: KTEvalConfig):  # the real backend; counts how often a model is loaded
        calls.append(config.model or "")
        return default_backend(config)

    out = tmp_path / "gen"
    config = KTEvalConfig(
        dataset=str(synthetic),
        output=str(out),
        mode="python",
        model="smollm2-135m-instruct",
        limit=2,
        max_new_tokens=24,
        batch_size=1,
    )
    first = run_kt_eval(config, factory=counting_backend, progress=False)
    assert calls == ["smollm2-135m-instruct"]
    completions = (out / COMPLETIONS_FILE).read_text().splitlines()
    assert len(completions) == 2 and all(json.loads(c)["completions"][0] is not None for c in completions)
    lines = completions[:1]  # as if killed after the first batch
    (out / COMPLETIONS_FILE).write_text(lines[0] + "\n", encoding="utf-8")
    second = run_kt_eval(config, factory=counting_backend, progress=False)
    assert len(calls) == 2  # the missing item only was generated (greedy: the same text)
    assert (out / COMPLETIONS_FILE).read_text().splitlines() == completions
    assert second["metrics"] == first["metrics"]
    assert run_kt_eval(config, factory=counting_backend, progress=False)["metrics"] == first["metrics"]
    assert len(calls) == 2  # a finished run loads no model


def test_the_summary_and_plots_go_to_an_offline_wandb_run(
    synthetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    rows = _rows(synthetic)[:3]
    path = _write(tmp_path / "p.jsonl", [{"id": r["id"], "completions": [r["program"]]} for r in rows])
    out = tmp_path / "out"
    config = KTEvalConfig(
        dataset=str(synthetic), output=str(out), mode="dsl", predictions=str(path), limit=3, wandb_project="kt-test"
    )
    run_kt_eval(config, progress=False)
    runs = list((out / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    (history,) = run_records(runs[0])["history"]
    summary = json.loads((out / "summary.json").read_text())
    assert history["accuracy"] == summary["metrics"]["accuracy"] == 1.0  # the programs themselves: all correct
    assert history["compression_rate"] == pytest.approx(summary["metrics"]["compression_rate"])
    assert history["items/_type"] == "table-file" and history["items/nrows"] == 3
    assert history["metrics_by_length/_type"] == history["correct_prefix/_type"] == "image-file"
    assert not any(".png" in key for key in history)


def test_sharded_evaluation_merges_byte_identical_to_one_run(synthetic: Path, tmp_path: Path) -> None:
    rows = _rows(synthetic)
    bad = {0: "no program here", 3: "output = [1, 2"}
    predictions = _write(
        tmp_path / "p.jsonl", [{"id": r["id"], "completions": [bad.get(i, r["program"])]} for i, r in enumerate(rows)]
    )
    base = ["eval", "kt", "--dataset", str(synthetic), "--mode", "dsl", "--predictions", str(predictions)]
    assert main([*base, "--output", str(tmp_path / "one")]) == 0
    sharded = tmp_path / "sharded"
    for index in ("1", "0"):
        assert main([*base, "--output", str(sharded), "--num-shards", "2", "--shard-index", index]) == 0
    assert not (sharded / SUMMARY_FILE).exists()
    assert main([*base, "--output", str(sharded)]) == 0  # merges the two shards, checks nothing again
    for name in (ITEMS_FILE, SUMMARY_FILE, REPORT_FILE):
        assert (sharded / name).read_bytes() == (tmp_path / "one" / name).read_bytes(), name


def test_a_rerun_with_other_settings_is_one_line_and_overwrite_starts_afresh(
    synthetic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows(synthetic)
    predictions = _write(tmp_path / "p.jsonl", [{"id": r["id"], "completions": [r["program"]]} for r in rows])
    base = ["eval", "kt", "--dataset", str(synthetic), "--predictions", str(predictions), "--output", str(tmp_path)]
    assert main(base) == 0
    before = (tmp_path / ITEMS_FILE).read_bytes()
    _write(
        predictions, [{"id": r["id"], "completions": ["output = []"]} for r in rows[:2]]
    )  # other content, same path
    capsys.readouterr()
    assert main([*base, "--limit", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "other settings (dataset_fingerprint, limit, num_items, predictions_sha256)" in err[0]
    assert (tmp_path / ITEMS_FILE).read_bytes() == before
    assert main([*base, "--limit", "2", "--overwrite"]) == 0
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary["metrics"]["num_items"] == 2 and summary["metrics"]["accuracy"] == 0.0


@pytest.mark.slow
def test_a_failed_generation_is_recorded_and_made_again_by_the_rerun(synthetic: Path, tmp_path: Path) -> None:
    failures = [RuntimeError("the inference server went away")] * 3  # the first call and its two retries

    class Flaky:  # the real backend, whose first request (and its retries) fail
        def __init__(self, config: KTEvalConfig) -> None:
            self.backend = default_backend(config)

        def generate(self, prompts, sampling):  # type: ignore[no-untyped-def]
            if failures:
                raise failures.pop()
            return self.backend.generate(prompts, sampling)

    config = KTEvalConfig(
        dataset=str(synthetic),
        output=str(tmp_path),
        mode="dsl",
        model="smollm2-135m-instruct",
        limit=2,
        max_new_tokens=16,
        batch_size=1,
    )
    run_kt_eval(config, factory=Flaky, progress=False)
    first = [json.loads(line) for line in (tmp_path / COMPLETIONS_FILE).read_text().splitlines()]
    assert first[0]["completions"] is None and "went away" in first[0]["error"]
    assert first[1]["completions"] is not None
    summary = run_kt_eval(config, factory=Flaky, progress=False)
    second = [json.loads(line) for line in (tmp_path / COMPLETIONS_FILE).read_text().splitlines()]
    assert "error" not in second[0] and second[0]["completions"] and second[1] == first[1]
    assert summary["metrics"]["num_items"] == 2


def test_baselines_go_to_an_offline_wandb_run(
    synthetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every evaluation logs its headline scalars and a table of items: kt-baselines logged nothing."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "b"
    command = ["eval", "kt-baselines", "--dataset", str(synthetic), "--output", str(out), "--limit", "4"]
    assert main([*command, "--wandb-project", "kt-test"]) == 0
    (run,) = (out / "wandb").glob("offline-run-*")
    logged = run_records(run)
    (history,) = logged["history"]
    result = json.loads((out / SUMMARY_FILE).read_text())
    assert history["gzip/per_sequence"] == pytest.approx(result["gzip"]["per_sequence"])
    assert history["upper_bound/compression_rate"] == pytest.approx(result["upper_bound"]["compression_rate"])
    assert history["repeat/compression_rate"] == 1.0 and "gzip_chunks_128/whole_set" in history
    assert history["items/_type"] == "table-file" and history["items/nrows"] == 4
    assert logged["config"]["dataset_fingerprint"] == result["dataset_fingerprint"]
