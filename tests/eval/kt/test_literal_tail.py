"""`kt eval kt --literal-tail`: a left-to-right program that goes wrong is also tried cut after the prefix it wrote,
with the rest of the sequence as one literal; kept only when shorter than the raw sequence, reported beside the
model's own programs, never cheaper than its lines cost."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dsl.bits import program_bits
from dsl.interpreter import run_program
from dsl.segments import segment_program
from eval.kt.evaluate import ITEMS_FILE, KTEvalConfig
from eval.kt.literal_tail import literal_tail_program
from eval.kt.report import REPORT_FILE
from kt_train.cli import main
from tests.kt_templates import crt_template

RUN = [7] * 20
SEQUENCE = [9, 4, *RUN, 1, 2, 3, 4, 5, 6, 200, 100]
RIGHT = segment_program(SEQUENCE)
# its third piece written one too long (a run past its end): the first two pieces still write a prefix of 22 numbers
WRONG = RIGHT.replace("range_func_up(1, 6)", "range_func_up(1, 7)")
RAW_BITS = 8 * len(SEQUENCE)


def test_a_program_that_goes_wrong_is_cut_after_its_prefix_and_finished_with_the_rest() -> None:
    assert WRONG != RIGHT and run_program(WRONG) != SEQUENCE
    tailed = literal_tail_program(WRONG, SEQUENCE, RAW_BITS)
    assert tailed is not None and tailed.tail_length == len(SEQUENCE) - 22
    assert run_program(tailed.text) == SEQUENCE
    assert tailed.text.splitlines()[:3] == RIGHT.splitlines()[:3]  # the model's lines that wrote the prefix
    assert "set_list([1, 2, 3, 4, 5, 6, 200, 100])" in tailed.text
    assert program_bits(RIGHT) < program_bits(tailed.text) < RAW_BITS


@pytest.mark.parametrize(
    "program",
    [
        RIGHT,  # complete: the checker scores it as it is
        None,
        "",
        "sequence_1 = set_list([1, 2])\noutput = sequence_1",  # writes no prefix
        "sequence_1 = set_list([9, 4, 7])\nsequence_2 = repeat_num(5, 8)\noutput = sequence_2",  # a prefix too short
        "sequence_1 = range_func_up(0, 1000000000)\noutput = sequence_1",  # past the run limits
        "sequence_1 = set_list([" + "9" * 4000 + "])",
        "import os",
        # the Chinese-remainder template (tests/kt_templates.py) writing the first 9 numbers, then a wrong line
        crt_template(SEQUENCE[:9]).replace("output = sequence_3", "sequence_4 = repeat_num(99, 1)"),
    ],
)
def test_no_tail_when_the_program_is_whole_writes_nothing_or_would_cost_more(program: str | None) -> None:
    assert literal_tail_program(program, SEQUENCE, RAW_BITS) is None


def test_a_line_the_prefix_does_not_read_is_not_sent() -> None:
    lines = WRONG.splitlines()
    dead = "sequence_2 = repeat_num(20, 7)"  # passes as the next numbers, then never concatenated
    written = [
        lines[0],
        dead,
        lines[1].replace("sequence_2", "sequence_3"),
        "sequence_4 = concatenate(sequence_1, sequence_3)",
        "sequence_5 = range_func_up(1, 7)",
    ]
    tailed = literal_tail_program("\n".join(written), SEQUENCE, RAW_BITS)
    assert tailed is not None and dead not in tailed.text and run_program(tailed.text) == SEQUENCE
    assert tailed.text.splitlines()[:3] == [lines[0], written[2], written[3]]


@pytest.fixture
def evalset(tmp_path: Path) -> Path:
    data = tmp_path / "evalset" / "data"
    data.mkdir(parents=True)
    sequences = [SEQUENCE, SEQUENCE[::-1], [5, 6]]
    rows = [{"id": f"seq-{i}", "sequence": s, "program": ""} for i, s in enumerate(sequences)]
    pq.write_table(pa.Table.from_pylist(rows), data / "test-00000-of-00001.parquet")
    predictions = tmp_path / "predictions.jsonl"
    texts = [WRONG, segment_program(SEQUENCE[::-1]), "output = nonsense"]
    predictions.write_text(
        "".join(json.dumps({"id": f"seq-{i}", "completions": [t]}) + "\n" for i, t in enumerate(texts))
    )
    return tmp_path


def test_kt_eval_keeps_the_tailed_program_and_reports_the_models_own_beside_it(evalset: Path) -> None:
    common = [
        "eval",
        "kt",
        "--dataset",
        str(evalset / "evalset"),
        "--mode",
        "dsl",
        "--predictions",
        str(evalset / "predictions.jsonl"),
    ]
    assert main([*common, "--output", str(evalset / "plain")]) == 0
    assert main([*common, "--literal-tail", "--output", str(evalset / "tail")]) == 0
    plain = json.loads((evalset / "plain" / "summary.json").read_text())["metrics"]
    tail = json.loads((evalset / "tail" / "summary.json").read_text())["metrics"]
    assert tail["literal_tail"]["model"] == {
        k: plain[k] for k in ("accuracy", "compression_rate", "precision", "executable")
    }
    assert tail["literal_tail"]["items_with_tail"] == 1
    assert tail["literal_tail"]["numbers_written_by_model"] == pytest.approx(22 / len(SEQUENCE))
    assert plain["accuracy"] == pytest.approx(1 / 3) and tail["accuracy"] == pytest.approx(2 / 3)
    assert tail["compression_rate"] < plain["compression_rate"]
    items = [json.loads(line) for line in (evalset / "tail" / ITEMS_FILE).read_text().splitlines()]
    first = items[0]
    assert first["derived"] == "literal_tail" and first["correct"] and first["y_bits"] < RAW_BITS
    assert first["samples"][0]["completion"] == WRONG and not first["samples"][0]["correct"]
    assert [len(item["samples"]) for item in items] == [2, 1, 1]  # a whole program and a wrong one get no tail
    assert "Literal tail: 1 item(s)" in (evalset / "tail" / REPORT_FILE).read_text()
    # the same folder without the tails is another run: refused, never mixed
    assert main([*common, "--output", str(evalset / "tail")]) != 0


def test_literal_tail_needs_dsl_programs_under_the_uniform_prior(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--literal-tail"):
        KTEvalConfig(dataset="d", output="o", predictions="p", mode="python", literal_tail=True)
    with pytest.raises(ValueError, match="--literal-tail"):
        KTEvalConfig(dataset="d", output="o", predictions="p", program_prior="gzip", literal_tail=True)
