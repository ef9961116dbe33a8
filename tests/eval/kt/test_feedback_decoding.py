"""Feed & ex decoding with a real model: a tiny SeqCoder trained until it writes two answers by heart, one of them a
program whose second line fails in the interpreter. Decoding with execution feedback must end that program at the
failing line (the checker's verdict: runtime error), and write the interpreter's values after each good line."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from dsl.feedback import LineFeedback, with_feedback
from eval.kt.evaluate import COMPLETIONS_FILE, ITEMS_FILE, KTEvalConfig
from eval.kt.feedback_decoding import feed_and_execute
from eval.kt.prompts import kt_prompt
from kt_train.cli import main
from kt_train.generation import SamplingConfig, TransformersBackend
from kt_train.models import DEFAULT_MODEL
from tests.seqcoder_by_heart import train_by_heart

FAILING_LINE = "sequence_2 = range_func_interval(1, 9, 0)"  # interval 0: a runtime error


def failing_answer() -> str:
    first = "sequence_1 = range_func_up(3, 7)"
    comment = LineFeedback().add(first).comment
    return f"{first} {comment}\n{FAILING_LINE} # [1, 2]\nsequence_3 = reverse_list(sequence_1) # [7, 6]\n" + (
        "output = sequence_3 # [7, 6]"
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict]]:
    """An evaluation set of two items and a tiny SeqCoder that answers them by heart: the first with its gold
    program and feedback comments, the second with `failing_answer()`."""
    root = tmp_path_factory.mktemp("feedback")
    evalset = root / "evalset"
    assert main(["dsl", "eval-set", "--bytes", "3000", "--seed", "3", "--output", str(evalset), "--quiet"]) == 0
    table = pq.read_table(next((evalset / "data").glob("*.parquet")))
    rows = sorted(table.to_pylist(), key=lambda row: len(row["program"]) + len(row["sequence"]))[:2]  # quickest
    two = root / "two" / "data"  # a set of those two items
    two.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), two / "test-00000-of-00001.parquet")
    answers = [with_feedback(rows[0]["program"]), failing_answer()]
    pairs = [(row["sequence"], answer) for row, answer in zip(rows, answers, strict=True)]
    out = train_by_heart(pairs, root / "model", stop_loss=0.005)
    return out, two.parent, rows


def test_the_interpreter_writes_the_values_and_a_failing_line_ends_the_program(trained) -> None:
    model_dir, _, rows = trained
    model, tokenizer = AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
    backend = TransformersBackend(model, tokenizer)
    prompts = [kt_prompt(row["sequence"], "dsl") for row in rows]
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=128)
    plain = [texts[0] for texts in backend.generate(prompts, sampling)]
    assert plain == [with_feedback(rows[0]["program"]), failing_answer()]  # learnt by heart
    fed = [texts[0] for texts in feed_and_execute(backend, prompts, sampling)]
    assert fed[0] == with_feedback(rows[0]["program"])  # every comment the interpreter's, the same as trained
    assert fed[1] == failing_answer().split("\n")[0] + "\n" + FAILING_LINE  # ends at the failing line


def test_kt_eval_with_execution_feedback_records_the_supervisors_verdicts(trained, tmp_path: Path) -> None:
    model_dir, evalset, rows = trained
    out = tmp_path / "eval"
    args = [
        "eval",
        "kt",
        "--dataset",
        str(evalset),
        "--mode",
        "dsl",
        "--model",
        str(model_dir),
        "--max-new-tokens",
        "128",
        "--execution-feedback",
        "--output",
        str(out),
    ]
    assert main(args) == 0
    items = [json.loads(line) for line in (out / ITEMS_FILE).read_text().splitlines()]
    assert [item["verdict"] for item in items] == ["correct", "runtime_error"]
    assert "interval must not be zero" in items[1]["error"]
    assert items[0]["program"] == with_feedback(rows[0]["program"])  # comments kept; the parser ignores them
    completions = [json.loads(line) for line in (out / COMPLETIONS_FILE).read_text().splitlines()]
    assert not any("sequence_3" in c["completions"][0] for c in completions[1:])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["execution_feedback"] is True
    # the same folder without feedback is another run: refused, never mixed
    assert main([a for a in args if a != "--execution-feedback"]) != 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mode": "python"}, "--mode dsl"),
        ({"backend": "vllm"}, "--backend transformers"),
        ({"feedback_max_values": 0}, "feedback-max-values"),
    ],
)
def test_feedback_settings_that_cannot_work_are_refused(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KTEvalConfig(dataset="d", output="o", model=DEFAULT_MODEL, execution_feedback=True, **changes)
