"""Line search with a real model: a tiny SeqCoder trained on two answers to one sequence, the wrong one (a count
one too many in its second line) twice as often, so greedy decoding writes the wrong program and sampling writes
either. Line search must find the right program by resampling that line only; a line no sample fixes ends the
program, unless the line before can be taken back (a run one too short)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from eval.kt.evaluate import COMPLETIONS_FILE, ITEMS_FILE, KTEvalConfig
from eval.kt.line_search import LeftToRightProgram, line_passes, line_search
from eval.kt.prompts import kt_prompt
from kt_train.cli import main
from kt_train.generation import SamplingConfig, TransformersBackend
from kt_train.models import DEFAULT_MODEL
from tests.seqcoder_by_heart import train_by_heart

SEQUENCES = [[9, 4, 7, 7, 7, 7, 7], [200, 3, 1, 2, 3, 4, 5], [31, 8, 2, 2, 2, 2, 2, 2]]
RIGHT = (
    "sequence_1 = set_list([9, 4])\nsequence_2 = repeat_num(5, 7)\nsequence_3 = concatenate(sequence_1, sequence_2)\n"
)
WRONG = RIGHT.replace("repeat_num(5, 7)", "repeat_num(6, 7)")  # runs past the end
ENDING = "output = sequence_3"
# the second sequence: only a wrong answer is learnt (its literal copied wrong), so no sample fixes it
ONLY_WRONG = "sequence_1 = set_list([200, 4])\nsequence_2 = range_func_up(1, 5)\noutput = sequence_2"
# the third: a run one too short (twice as often as the right count) passes its line's check; nothing can follow it
RIGHT_RUN = RIGHT.replace("[9, 4]", "[31, 8]").replace("repeat_num(5, 7)", "repeat_num(6, 2)") + ENDING
SHORT_RUN = RIGHT_RUN.replace("repeat_num(6, 2)", "repeat_num(5, 2)")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A three-item evaluation set and a tiny SeqCoder that writes WRONG (2/3) or RIGHT (1/3) for the first item,
    ONLY_WRONG for the second, SHORT_RUN (2/3) or RIGHT_RUN (1/3) for the third."""
    root = tmp_path_factory.mktemp("line_search")
    data = root / "evalset" / "data"
    data.mkdir(parents=True)
    rows = [{"id": f"seq-{i}", "sequence": s, "program": ""} for i, s in enumerate(SEQUENCES)]
    pq.write_table(pa.Table.from_pylist(rows), data / "test-00000-of-00001.parquet")
    answers = [
        (SEQUENCES[0], WRONG + ENDING),
        (SEQUENCES[0], WRONG + ENDING),
        (SEQUENCES[0], RIGHT + ENDING),
        (SEQUENCES[1], ONLY_WRONG),
        (SEQUENCES[2], SHORT_RUN),
        (SEQUENCES[2], SHORT_RUN),
        (SEQUENCES[2], RIGHT_RUN),
    ]
    out = train_by_heart(answers, root / "model")
    return out, root / "evalset"


@pytest.mark.parametrize(
    ("values", "prefix", "is_output", "passes"),
    [
        ([9, 4], 0, False, True),  # a longer prefix
        ([7, 7, 7], 2, False, True),  # the next numbers
        ([7, 7, 7, 7, 7, 7], 2, False, False),  # runs past the end
        ([4, 9], 0, False, True),  # the next numbers reversed (a descending run written ascending)
        ([9], 2, False, False),  # a prefix no longer than the one written
        ([4, 7], 3, False, False),  # not the numbers where the program stands
        ([], 0, False, False),
        ([9, 4, 7, 7, 7, 7, 7], 7, True, True),
        ([9, 4, 7, 7, 7, 7], 6, True, False),  # an output line before the sequence is whole
    ],
)
def test_a_line_passes_when_it_continues_the_sequence(values, prefix, is_output, passes) -> None:
    assert line_passes(values, SEQUENCES[0], prefix, is_output) is passes


def test_line_search_resamples_the_failing_line_and_ends_a_program_no_sample_fixes(trained) -> None:
    model_dir, _ = trained
    model, tokenizer = AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
    backend = TransformersBackend(model, tokenizer)
    prompts = [kt_prompt(s, "dsl") for s in SEQUENCES]
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=64, seed=1)
    greedy = [texts[0] for texts in backend.generate(prompts, SamplingConfig(temperature=0.0, max_new_tokens=128))]
    assert greedy == [WRONG + ENDING, ONLY_WRONG, SHORT_RUN]  # greedy decoding writes the wrong programs
    found = line_search(backend, prompts, SEQUENCES, sampling, samples=8)
    assert found[0].completion == RIGHT + ENDING
    assert found[0].sampled_lines > 0 and found[0].greedy_lines == 4
    assert found[1].completion == ""  # its first line is already wrong and no sample fixes it
    assert found[1].sampled_lines == 8
    assert found[2].completion == SHORT_RUN.removesuffix(ENDING).rstrip()  # the short run passed; no output line
    assert line_search(backend, prompts, SEQUENCES, sampling, samples=8) == found  # same seed, same programs
    backtracking = line_search(backend, prompts, SEQUENCES, sampling, samples=16, backtracks=4)
    assert backtracking[2].completion == RIGHT_RUN  # the concatenation, then the short run taken back
    assert backtracking[2].backtracks == 2
    assert backtracking[0].completion == found[0].completion


def test_kt_eval_line_search_scores_the_found_program_and_counts_its_cost(trained, tmp_path: Path) -> None:
    model_dir, evalset = trained
    common = [
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
    ]
    assert main([*common, "--output", str(tmp_path / "greedy")]) == 0
    args = [
        *common,
        "--line-search",
        "16",
        "--line-backtracks",
        "4",
        "--temperature",
        "1.0",
        "--seed",
        "1",
        "--output",
        str(tmp_path / "lines"),
    ]
    assert main(args) == 0
    verdicts = {}
    for run in ("greedy", "lines"):
        items = [json.loads(line) for line in (tmp_path / run / ITEMS_FILE).read_text().splitlines()]
        verdicts[run] = [item["verdict"] for item in items]
    assert "correct" not in verdicts["greedy"]
    assert verdicts["lines"][0] == verdicts["lines"][2] == "correct" and verdicts["lines"][1] != "correct"
    rows = [json.loads(line) for line in (tmp_path / "lines" / COMPLETIONS_FILE).read_text().splitlines()]
    assert rows[0]["line_search"]["sampled_lines"] > 0
    summary = json.loads((tmp_path / "lines" / "summary.json").read_text())
    assert summary["metrics"]["line_search"]["sampled_lines"] == sum(r["line_search"]["sampled_lines"] for r in rows)
    assert summary["metrics"]["line_search"]["backtracks"] == 2 + rows[1]["line_search"]["backtracks"]
    assert "taken back" in (tmp_path / "lines" / "report.md").read_text()
    # the same folder with another search is another run: refused, never mixed
    assert main([a if a != "16" else "4" for a in args]) != 0


@pytest.mark.parametrize(
    "line",
    [
        "sequence_1 = range_func_up(0, 1000000000)",  # past the run limits: refused before it is built
        "sequence_1 = set_list([" + "9" * 4000 + "])",  # an integer past max_int_bits
        "output = set_list([9, 4, 7, 7, 7, 7, 7])",  # not a DSL output line of a program (no sequence variable)
        "import os",
    ],
)
def test_a_hostile_line_never_passes_and_costs_little(line: str) -> None:
    program = LeftToRightProgram("prompt", tuple(SEQUENCES[0]))
    started = time.process_time()
    assert not program.accept(line)
    assert program.lines == [] and not program.done
    assert time.process_time() - started < 2.0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"temperature": 0.0}, "--temperature > 0"),
        ({"mode": "python"}, "--mode dsl"),
        ({"search": 4}, "without --search"),
        ({"line_search": -1}, "must be >= 0"),
        ({"line_search": 0, "line_backtracks": 2}, "needs --line-search"),
    ],
)
def test_line_search_settings_that_cannot_work_are_refused(changes: dict, message: str) -> None:
    settings = {"line_search": 4, "temperature": 1.0} | changes
    with pytest.raises(ValueError, match=message):
        KTEvalConfig(dataset="d", output="o", model=DEFAULT_MODEL, **settings)
