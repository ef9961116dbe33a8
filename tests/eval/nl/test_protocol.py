"""`kt nl run` end to end: deterministic participants, imported outputs, guard charging, resuming, settings, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from dsl.expr.prompts import shot_expressions
from dsl.expr.serialize import ARITHMETIC, parse_infix, to_sexpr
from dsl.expr.suite import SuiteConfig, build_suite, load_suite, without_shots, write_suite
from eval.nl.models import parse_participant, parser_extract
from eval.nl.protocol import NLRunConfig, analysis_features, run_nl, select_expressions
from kt_train.cli import main as kt_main
from kt_train.stages import RunOptions

SMALL = {"k_max": 4, "d_max": 4, "instances": 2}


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("suite")
    write_suite(build_suite(SuiteConfig(**SMALL)), path)
    return path


def run(suite: Path, output: Path, generators: list[str], extractors: list[str], **kwargs: object) -> dict:
    config = NLRunConfig(str(suite), str(output), generators, extractors, **kwargs)  # type: ignore[arg-type]
    return run_nl(config, progress=False)


def test_deterministic_participants_write_every_artifact(suite_dir: Path, tmp_path: Path) -> None:
    summary = run(suite_dir, tmp_path, ["sexpr", "json", "procedural"], ["parser"])
    n = len(load_suite(suite_dir))
    results = pd.read_parquet(tmp_path / "results.parquet")
    assert len(results) == n * 3 and results["correct"].all()  # lossless encodings, exact parser
    for name in ("report.md", "summary.json", "matrix.csv", "matrix.png", "settings.json"):
        assert (tmp_path / name).is_file(), name
    assert (tmp_path / "generations" / "procedural.jsonl").is_file()
    assert len((tmp_path / "extractions" / "parser.jsonl").read_text().splitlines()) == n * 3
    assert summary["matrix"]["cells"] == {"parser": {"procedural": 100.0}}  # the NL matrix: prose generators only
    assert [row["tax"] for row in summary["nl_tax"]] == [0.0]  # lossless encodings read exactly: no tax


def test_imported_outputs_guard_failures_are_charged_and_never_extracted(suite_dir: Path, tmp_path: Path) -> None:
    rows = load_suite(suite_dir)[:4]
    leak, missing, good = rows[0], rows[1], rows[2]  # rows[3] has no word problem at all: no output
    words = tmp_path / "api.jsonl"
    lines = [
        {"id": leak["id"], "completions": [" and ".join(f"{{{v}}} + 3 apples" for v in leak["variables"])]},
        {"id": missing["id"], "completions": ["Somebody has some apples and buys more."]},
        {"id": good["id"], "completions": [parser_extract_source(good)]},
    ]
    words.write_text("".join(json.dumps(line) + "\n" for line in lines))
    answers = tmp_path / "reader.jsonl"
    answers.write_text(json.dumps({"id": f"{good['id']}/api", "completions": [f"Expression: {good['infix']}"]}) + "\n")
    out = tmp_path / "run"
    run(suite_dir, out, [f"api={words}"], [f"reader={answers}", "parser"], max_expressions=None)
    results = pd.read_parquet(out / "results.parquet").set_index(["expr_id", "extractor"])
    assert results.loc[(leak["id"], "reader"), "guard"] == "leak"
    assert results.loc[(missing["id"], "reader"), "guard"] == "missing_placeholder"
    assert results.loc[(rows[3]["id"], "reader"), "guard"] == "no_output"
    assert results.loc[(good["id"], "reader"), "verdict"] == "correct"
    assert results.loc[(good["id"], "parser"), "verdict"] == "correct"  # the procedure parses back
    charged = results[results["guard"] != "pass"]
    assert (charged["verdict"] == "guard_fail").all() and not charged["correct"].any()
    extracted = [
        json.loads(line)["expr_id"] for line in (out / "extractions" / "parser.jsonl").read_text().splitlines()
    ]
    assert leak["id"] not in extracted and good["id"] in extracted


def parser_extract_source(row: dict) -> str:
    """A guard-passing word problem for `row`: the procedural rendering."""
    from dsl.expr.procedural import render_arithmetic
    from dsl.expr.serialize import parse_sexpr
    from dsl.expr.suite import hashed_rng

    return render_arithmetic(parse_sexpr(row["sexpr"]), hashed_rng("test", row["id"]))


LOGS = (".failures.jsonl", ".timings.jsonl")  # logs of what happened, not results: not byte-stable


def _files(folder: Path) -> dict[str, bytes]:
    """Every file of a run folder but its logs and plots, by relative path."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.name.endswith(LOGS) and path.suffix != ".png"
    }


@pytest.mark.slow
def test_two_runs_and_a_killed_then_resumed_one_hold_the_same_bytes(suite_dir: Path, tmp_path: Path) -> None:
    """Same seed, same bytes (issue 38: the records held each batch's timing)."""
    import subprocess
    import sys
    import time

    command = [
        sys.executable,
        "-m",
        "kt_train.cli",
        "nl",
        "run",
        "--quiet",
        "--suite",
        str(suite_dir),
        "--generators",
        "procedural",
        "sexpr",
        "--extractors",
        "parser",
        "--batch-size",
        "1",
    ]
    for name in ("a", "b"):
        subprocess.run([*command, "--output", str(tmp_path / name)], check=True, capture_output=True, timeout=300)
    killed = tmp_path / "killed"
    for records in ("generations/procedural.jsonl", "extractions/parser.jsonl"):  # SIGKILL once records are written
        process = subprocess.Popen(
            [*command, "--output", str(killed)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        while process.poll() is None and not ((killed / records).is_file() and (killed / records).stat().st_size):
            time.sleep(0.005)
        process.kill()
        process.wait()
        assert not (killed / "done.json").exists()  # killed before the end
    subprocess.run([*command, "--output", str(killed)], check=True, capture_output=True, timeout=300)
    assert (tmp_path / "a" / "generations" / "procedural.jsonl").is_file()
    first = _files(tmp_path / "a")
    assert _files(tmp_path / "b") == first
    assert _files(killed) == first
    assert (tmp_path / "a" / "extractions" / "parser.timings.jsonl").is_file()  # the timings: a log beside


def untimed(path: Path) -> list[dict]:
    """The records of a JSONL file, in order."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_resumed_run_ends_identical_and_other_settings_are_refused(suite_dir: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    run(suite_dir, first, ["procedural", "sexpr"], ["parser"], max_expressions=9)
    run(suite_dir, second, ["procedural", "sexpr"], ["parser"], max_expressions=9)
    generations = second / "generations" / "procedural.jsonl"
    lines = generations.read_text().splitlines()
    generations.write_text("\n".join(lines[:4]) + "\n" + lines[4][:20])  # killed mid-write: a torn last line
    (second / "results.parquet").unlink()
    run(suite_dir, second, ["procedural", "sexpr"], ["parser"], max_expressions=9)
    for name in ("generations/procedural.jsonl", "extractions/parser.jsonl"):
        assert untimed(first / name) == untimed(second / name)
    pd.testing.assert_frame_equal(
        pd.read_parquet(first / "results.parquet"), pd.read_parquet(second / "results.parquet")
    )
    with pytest.raises(ValueError, match="other settings"):
        run(suite_dir, second, ["procedural"], ["parser"], max_expressions=9, extractor_shots=0)


def test_shards_merge_into_one_run(suite_dir: Path, tmp_path: Path) -> None:
    participants = (["procedural", "sexpr"], ["parser"])
    one, sharded = tmp_path / "one", tmp_path / "sharded"
    run(suite_dir, one, *participants, max_expressions=9)
    for index in (2, 0, 1):
        config = NLRunConfig(str(suite_dir), str(sharded), *participants, max_expressions=9)
        part = run_nl(config, progress=False, options=RunOptions(num_shards=3, shard_index=index))
        assert part["expressions"] == 3 and part["word_problems"] == 6
    assert not (sharded / "results.parquet").exists()
    run(suite_dir, sharded, *participants, max_expressions=9)  # merges the shards, generates nothing
    for name in ("generations/procedural.jsonl", "generations/sexpr.jsonl", "extractions/parser.jsonl"):
        assert untimed(sharded / name) == untimed(one / name)
    pd.testing.assert_frame_equal(
        pd.read_parquet(one / "results.parquet"), pd.read_parquet(sharded / "results.parquet")
    )
    assert not list(sharded.rglob("*.shard-*"))


def test_selection_spreads_over_cells_and_shots_stay_out(suite_dir: Path) -> None:
    rows = load_suite(suite_dir)
    chosen = select_expressions(rows, 7, seed=1)
    assert len(chosen) == 7 and {(r["k"], r["d"]) for r in chosen} == {(r["k"], r["d"]) for r in rows}  # all 5 cells
    assert chosen == select_expressions(rows, 7, seed=1) and chosen != select_expressions(rows, 7, seed=2)
    shot = to_sexpr(parse_infix(shot_expressions("arithmetic")[0], ARITHMETIC))
    planted = [*rows, {**rows[0], "id": "planted", "sexpr": shot}]
    assert [r["id"] for r in without_shots(planted, "arithmetic")] == [r["id"] for r in rows]


def test_logic_suite_round_trip(tmp_path: Path) -> None:
    suite = tmp_path / "logic"
    write_suite(build_suite(SuiteConfig(domain="logic", k_max=3, d_max=3, instances=2)), suite)
    run(suite, tmp_path / "run", ["procedural", "json"], ["parser"])
    results = pd.read_parquet(tmp_path / "run" / "results.parquet")
    assert results["correct"].all() and set(results["domain"]) == {"logic"}


def test_participant_specs() -> None:
    lm = parse_participant("base=smollm2-135m-instruct", "extractor")
    assert (lm.label, lm.kind, lm.model, lm.adapter) == ("base", "lm", "smollm2-135m-instruct", None)
    assert parse_participant("sexpr", "generator").generator_kind == "structured"
    assert parse_participant("procedural", "generator").generator_kind == "nl"
    with pytest.raises(ValueError, match="not a extractor"):
        parse_participant("sexpr", "extractor")
    with pytest.raises(FileNotFoundError, match="adapter_config"):
        parse_participant("ft=smollm2-135m-instruct@/nonexistent", "generator")
    with pytest.raises(ValueError, match="share a label"):
        NLRunConfig("s", "o", ["procedural", "procedural"], ["parser"]).participants()
    with pytest.raises(ValueError, match="part of the record ids"):  # ids are `<expr>/<generator>/<extractor>`
        parse_participant("my reader=smollm2-135m-instruct", "extractor")
    assert parser_extract("nothing to parse here, friend", "arithmetic") is None


def test_cli_errors_are_one_line(suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["nl", "run", "--suite", str(tmp_path / "missing"), "--output", str(tmp_path / "o")]
    assert kt_main([*argv, "--generators", "procedural", "--extractors", "parser"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    argv = ["nl", "run", "--suite", str(suite_dir), "--output", str(tmp_path / "bad"), "--quiet"]
    assert kt_main([*argv, "--generators", "nosuch/model-xyz", "--extractors", "parser"]) == 2
    assert "'nosuch/model-xyz' is not in the local hub cache" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()  # refused before anything loads or is written
    argv = ["nl", "run", "--suite", str(suite_dir), "--output", str(tmp_path / "ok"), "--quiet"]
    assert kt_main([*argv, "--generators", "procedural", "--extractors", "parser", "--max-expressions", "3"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["mean_cell"] == 100.0
    row = load_suite(suite_dir)[0]
    for name, line in [
        ("old", {"id": row["id"], "completion": parser_extract_source(row)}),  # NL's old field
        ("two", {"id": row["id"], "completions": [parser_extract_source(row)] * 2}),  # one word problem per id
    ]:
        (tmp_path / f"{name}.jsonl").write_text(json.dumps(line) + "\n")
        argv = ["nl", "run", "--suite", str(suite_dir), "--output", str(tmp_path / name), "--quiet"]
        assert kt_main([*argv, "--generators", f"api={tmp_path / name}.jsonl", "--extractors", "parser"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        expected = "`completion` is the old form" if name == "old" else "`completions` holds 2 texts"
        assert len(err) == 1 and f"{name}.jsonl:1: {expected}" in err[0], err


@pytest.mark.slow
def test_the_embedded_model_in_both_roles(suite_dir: Path, tmp_path: Path) -> None:
    lm = "smol=smollm2-135m-instruct"
    run(
        suite_dir, tmp_path, [lm, "sexpr"], [lm, "parser"], max_expressions=2, generator_tokens=24, extractor_tokens=12
    )
    results = pd.read_parquet(tmp_path / "results.parquet")
    assert len(results) == 2 * 2 * 2
    smol = results[results["generator"] == "smol"]
    assert set(smol["generator_family"]) == {"llama"} and smol["generator_params"].between(0.1, 0.2).all()
    read = results[(results["extractor"] == "smol") & (results["generator"] == "sexpr")]
    assert read["verdict"].isin(["correct", "wrong", "parse_error"]).all()  # the model answered every S-expression
    assert (tmp_path / "report.md").read_text().count("| smol |") >= 1


def test_judging_over_processes_gives_the_same_results(suite_dir: Path, tmp_path: Path) -> None:
    words = tmp_path / "words.jsonl"
    rows = load_suite(suite_dir)[:6]
    words.write_text(
        "".join(json.dumps({"id": r["id"], "completions": [parser_extract_source(r)]}) + "\n" for r in rows)
    )
    answers = tmp_path / "answers.jsonl"  # right, wrong (another expression), unparsable, wrong
    texts = ["Expression: " + rows[0]["infix"], "Expression: " + rows[0]["infix"], "Expression: (", "B - A"]
    answers.write_text(
        "".join(json.dumps({"id": f"{r['id']}/w", "completions": [t]}) + "\n" for r, t in zip(rows, texts))
    )
    frames = []
    for workers in (1, 2):
        run(
            suite_dir,
            tmp_path / f"w{workers}",
            [f"w={words}", "sexpr"],
            [f"a={answers}", "parser"],
            max_expressions=None,
            judge_workers=workers,
        )
        frames.append(pd.read_parquet(tmp_path / f"w{workers}" / "results.parquet"))
    pd.testing.assert_frame_equal(*frames)
    read = frames[0][(frames[0]["extractor"] == "a") & (frames[0]["generator"] == "w")].set_index("expr_id")
    assert read.loc[rows[0]["id"], "verdict"] == "correct" and read.loc[rows[2]["id"], "verdict"] == "parse_error"


def test_predictor_features_use_sizes_only_when_every_model_has_one() -> None:
    base = {
        "k": 2,
        "d": 2,
        "l_T": 0,
        "n_add": 1,
        "r_math": 0.1,
        "skeleton": "s",
        "root_op": "+",
        "generator_kind": "nl",
    }
    lms = pd.DataFrame(
        [
            base
            | {
                "generator": "a",
                "extractor": "b",
                "generator_params": 0.1,
                "extractor_params": 0.2,
                "generator_family": "llama",
                "extractor_family": "qwen3",
            }
        ]
    )
    numeric, categorical = analysis_features(lms)
    assert {"generator_params", "extractor_params", "r_math", "l_T"} <= set(numeric)
    assert "generator_family" in categorical and "generator" not in categorical
    mixed = pd.concat([lms, lms.assign(generator="procedural", generator_params=float("nan"))])
    numeric, categorical = analysis_features(mixed)
    assert "generator_params" not in numeric and {"generator", "extractor"} <= set(categorical)
