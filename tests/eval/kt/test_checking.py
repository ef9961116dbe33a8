"""Candidate checking (eval.kt.checking, eval.kt.completions): the real interpreter and the real sandbox, with
hostile completions; every one gets a verdict and the batch goes on."""

from __future__ import annotations

import pytest

from eval.kt.checking import CandidateChecker, CheckConfig, Verdict, check_dsl, judge
from eval.kt.completions import extract_code
from eval.kt.prompts import COT, ZERO_SHOT, kt_prompt, python_prompt

SEQ = (1, 2, 3, 4)


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("output = [1, 2]\n###", "output = [1, 2]"),
        (
            "The Python program that generates the sequence is:\n```python\na = 1\noutput = [a]\n```\n###",
            "a = 1\noutput = [a]",
        ),
        (
            "Thought: use ```x``` fences.\nThe Python program that generates the sequence is:\noutput = [3]\n###",
            "output = [3]",
        ),
        ("Sure!\n```\nhelper = 2\n```\nthen\n```python\noutput = [helper]\n```", "output = [helper]"),
        ("```python\noutput = [1]", "output = [1]"),  # an unclosed fence (cut by max tokens)
        ("python\noutput = [5]\n###\nmore text", "output = [5]"),
        ("output = [1]<|im_end|>junk", "output = [1]"),
        ("    output = [1]\n    x = 2", "output = [1]\nx = 2"),
        ("I cannot write that program.", None),
        (
            "```python\noutput = [7]\n```\nOutput:\nThe Python program that generates the sequence is: \nThe output",
            "output = [7]",
        ),  # the marker repeated after the program
        ("", None),
        ("###", None),
        (None, None),
    ],
)
def test_extract_code(completion: str | None, expected: str | None) -> None:
    assert extract_code(completion) == expected


def test_prompts_hold_the_sequence_and_the_official_wording() -> None:
    prompt = python_prompt([1, 2, 3])
    assert prompt == ZERO_SHOT.format(sequence="[1, 2, 3]")
    assert prompt.startswith("Generate a Python program that, when executed, reproduces a specified input sequence.")
    assert prompt.endswith(
        "### Input Sequence:\n[1, 2, 3]\n\n### Expected Output:\nThe Python program that generates the sequence is:"
    )
    cot = python_prompt([7], "cot")
    assert cot == COT.format(sequence="[7]") and cot.endswith("### Thought:")
    assert "The Python program that generates the sequence is:" in cot
    assert "1 2 3" in kt_prompt([1, 2, 3], "dsl")
    with pytest.raises(ValueError, match="SeqCoder"):
        kt_prompt([1], "dsl", "cot")


def test_dsl_verdicts() -> None:
    config = CheckConfig(max_dsl_elements=1000)
    good = check_dsl("s = range_func_up(1, 4)\noutput = s", SEQ, config, None)
    assert good.verdict == Verdict.CORRECT and good.output == [1, 2, 3, 4]
    wrong = check_dsl("s = range_func_up(1, 9)\noutput = s", SEQ, config, None)
    assert wrong.verdict == Verdict.WRONG_OUTPUT and wrong.output_length == 9 and wrong.output == [1, 2, 3, 4, 5]
    assert check_dsl("print('hi')", SEQ, config, None).verdict == Verdict.SYNTAX_ERROR
    assert check_dsl("s = concatenate(s, s)\noutput = s", SEQ, config, None).verdict == Verdict.SYNTAX_ERROR
    bomb = check_dsl("s = repeat_num(100000000, 1)\noutput = s", SEQ, config, None)
    assert bomb.verdict == Verdict.RESOURCE and "limit 1000" in (bomb.error or "")
    assert check_dsl(None, SEQ, config, None).verdict == Verdict.NO_CODE


def test_natural_data_compares_mod_256() -> None:
    assert judge([257, 2], 2, (1, 2), 256).verdict == Verdict.CORRECT
    assert judge([257, 2], 2, (1, 2), None).verdict == Verdict.WRONG_OUTPUT
    assert judge([1, 2], 3, (1, 2), None).verdict == Verdict.WRONG_OUTPUT  # the full output was longer


def _forged(report: str) -> str:
    """A candidate that writes `report` on the result channel and exits before the checking code reports."""
    return f"import os\nos.write(3, {report.encode()!r})\nos._exit(0)"


HOSTILE = {
    "no code": (None, Verdict.NO_CODE),
    "syntax error": ("output = [1, 2,", Verdict.SYNTAX_ERROR),
    "indentation": ("if True:\noutput = 1", Verdict.SYNTAX_ERROR),
    "prints only": ("print([1, 2, 3, 4])", Verdict.NO_OUTPUT),
    "exits early": ("import sys\nsys.exit(0)", Verdict.NO_OUTPUT),
    "infinite loop": ("while True:\n    pass", Verdict.TIMEOUT),
    "huge output": ("output = list(range(1, 10**6))", Verdict.WRONG_OUTPUT),
    "memory bomb": ("output = [0] * 10**10", Verdict.MEMORY),
    "string output": ("output = '1234'", Verdict.BAD_OUTPUT),
    "float output": ("output = [1.0, 2, 3, 4]", Verdict.BAD_OUTPUT),
    "range output": ("output = range(1, 5)", Verdict.BAD_OUTPUT),
    "exception": ("output = [1 // 0]", Verdict.RUNTIME_ERROR),
    "hard exit": ("import os\nos._exit(0)", Verdict.KILLED),
    "kills its parent": ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\noutput = [1, 2, 3, 4]", None),
    "reads a host file": ("output = list(open('/etc/hostname', 'rb').read())", Verdict.RUNTIME_ERROR),
    "network": (
        "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)\noutput = []",
        Verdict.RUNTIME_ERROR,
    ),
    "swallows its alarm": (
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
        Verdict.TIMEOUT,
    ),
    # reports the candidate writes on the result channel (fd 3) itself before leaving: malformed is bad_output
    "forged null output": (_forged('{"status": "ok", "output": null, "length": 1}'), Verdict.BAD_OUTPUT),
    "forged string length": (_forged('{"status": "ok", "output": [1], "length": "many"}'), Verdict.BAD_OUTPUT),
    "forged bools": (_forged('{"status": "ok", "output": [true, 2, 3, 4], "length": 4}'), Verdict.BAD_OUTPUT),
    "forged short head": (_forged('{"status": "ok", "output": [1, 2], "length": 4}'), Verdict.BAD_OUTPUT),
    "forged extra key": (
        _forged('{"status": "ok", "output": [1], "length": 1, "verdict": "correct"}'),
        Verdict.BAD_OUTPUT,
    ),
    "forged status": (_forged('{"status": "correct"}'), Verdict.BAD_OUTPUT),
    "forged list": (_forged("[1, 2, 3, 4]"), Verdict.BAD_OUTPUT),
    "correct": ("output = list(range(1, 5))", Verdict.CORRECT),
    "correct with helper": (
        "def f(n):\n    return list(range(1, n + 1))\noutput = f(4)\nprint('done')",
        Verdict.CORRECT,
    ),
}


def test_hostile_python_completions_get_verdicts_and_the_batch_goes_on() -> None:
    names = list(HOSTILE)
    config = CheckConfig(timeout_s=1.0, memory_mb=256, workers=2)
    with CandidateChecker("python", config) as checker:
        results = checker.check([HOSTILE[n][0] for n in names], [SEQ] * len(names))
        again = checker.check(["output = [1, 2, 3, 4]"], [SEQ])  # the pool still works afterwards
    got = dict(zip(names, results, strict=True))
    for name, (_, expected) in HOSTILE.items():
        if expected is not None:
            assert got[name].verdict == expected, (name, got[name])
    # Killing its parent: as root the job runs as its own uid and is refused (PermissionError); otherwise the worker
    # dies and the job is reported as killed. Either way the run continues.
    assert got["kills its parent"].verdict in {Verdict.RUNTIME_ERROR, Verdict.KILLED}
    assert got["huge output"].output_length == 10**6 - 1 and len(got["huge output"].output or []) == 5
    assert got["syntax error"].error and "SyntaxError" in got["syntax error"].error
    assert again[0].verdict == Verdict.CORRECT
    forged = {name for name in names if name.startswith("forged")}
    assert {name for name in names if got[name].gaming} == forged  # an honest `bad_output` is not gaming


PATCHERS = [
    "import builtins, sys, math\nbuiltins.list = lambda *a: [0]\nbuiltins.isinstance = lambda *a: True\n"
    "sys.setrecursionlimit(60)\nmath.floor = lambda x: 99\nsys.modules['json'] = None\noutput = [9]",
    "import math, json\noutput = list(range(1, 3)) + [math.floor(3.5)] + json.loads('[4]')",
    "def f(n):\n    return n if n < 2 else f(n - 1) + 1\noutput = [1, 2, 3, f(300) // 75]",
    "import collections\ncollections.Counter = None\nimport tokenize\ntokenize.x = 1\noutput = [1, 2, 3, 4]",
    "import collections, tokenize\nassert collections.Counter is not None and not hasattr(tokenize, 'x')\n"
    "output = [1, 2, 3, 4]",
]


def test_a_candidate_that_patches_builtins_and_modules_changes_no_other_verdict() -> None:
    """Each candidate runs in its own process: patching builtins, modules and hooks affects nobody else."""
    with CandidateChecker("python", CheckConfig(workers=1)) as checker:
        verdicts = [r.verdict for r in checker.check(PATCHERS, [SEQ] * len(PATCHERS))]
    assert verdicts == [Verdict.WRONG_OUTPUT] + [Verdict.CORRECT] * 4


def test_a_candidate_cannot_fake_its_output_length_by_patching_len() -> None:
    code = "import builtins\nbuiltins.len = lambda x: 4\noutput = [1, 2, 3, 4, 5, 6]"
    with CandidateChecker("python", CheckConfig(workers=1)) as checker:
        (result,) = checker.check([code], [SEQ])
    assert result.verdict == Verdict.WRONG_OUTPUT
    assert result.output_length == 6


def test_identical_programs_run_once_but_are_judged_per_sequence() -> None:
    with CandidateChecker("python", CheckConfig(workers=1)) as checker:
        results = checker.check(["output = [1, 2]"] * 3, [(1, 2), (1, 3), (1, 2)])
    assert [r.verdict for r in results] == [Verdict.CORRECT, Verdict.WRONG_OUTPUT, Verdict.CORRECT]


def test_checker_validates_its_arguments() -> None:
    with pytest.raises(ValueError, match="mode"):
        CandidateChecker("java")  # type: ignore[arg-type]
    with CandidateChecker("dsl") as checker, pytest.raises(ValueError, match="programs for"):
        checker.check(["x"], [])
