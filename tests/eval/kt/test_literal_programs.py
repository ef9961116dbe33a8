"""Candidates judged without a process (eval.kt.literal_programs): the same statuses the sandbox's checking function
gives, side by side with the real sandbox, and nothing outside the literal subset judged here."""

from __future__ import annotations

import warnings

import pytest

from eval.kt.literal_programs import MAX_ELEMENTS, literal_status
from eval.kt.python_runner import CHECK_SOURCE, _status
from kt_train.sandbox import SandboxJob, SandboxPool

KEEP = 6
IN_SUBSET = {
    "one literal": "output = [3, 1, 4, 1, 5, 9, 2, 6]",
    "parts concatenated": "part_0 = [1, 2]\npart_1 = [3]\npart_2 = [4, 5, 6, 7]\noutput = part_0 + part_1 + part_2",
    "repeated": "a = [0, 1] * 3\noutput = 2 * a + [-1, +2]",
    "negative repeat": "output = [1] * -2",
    "booleans and ints over 255": "output = [True, False, 300, -7]",
    "an alias": "a = [5, 6]\nb = a\noutput = b",
    "no output": "a = [1]\nb = a + a",
    "empty program": "",
    "empty list": "output = []",
    "long": "output = " + str(list(range(256)) * 20),
    "syntax error": "output = [1, 2",
    "indentation error": "output = [1]\n  x = [2]",
    "huge integer literal": "output = [" + "9" * 5000 + "]",
    "huge integer literal in parts": "a = [" + "9" * 5000 + "]\noutput = a",
    "a null byte": "output = [1]\x00",
    "plain spellings": "\na1 = [ 1 ,2,\t3, ]\n\n  \nmatch = []\n_ = [+0, -0, 255]\noutput = a1+match +  _ \n",
    "a trailing comma alone": "output = [,]",
    "two commas": "output = [1,, 2]",
    "a leading zero": "output = [01]",
    "zeros": "output = [00, 0]",
    "an underscore in a number": "output = [1_000]",
    "unexpected indent": "a = [1]\n output = a",
    "a keyword": "None = [1]",
    "carriage returns": "a = [1]\r\noutput = a\r\n",
    "a comment": "output = [1]  # the sequence",
}
OUTSIDE = {
    "a unary plus on a list": "a = [1]\noutput = a + + a",
    "a name used before assignment": "output = a + b\na = [1]\nb = [2]",
    "__debug__": "__debug__ = [1]\noutput = __debug__",
    "tab error": "if True:\n\tx = 1\n        y = 2",
    "a call": "output = [len([1])]",
    "a file read": "output = [ord(c) for c in open('/etc/hostname').read()]",
    "an attribute": "import os\noutput = [os.getpid()]",
    "an undefined name": "output = values",
    "a tuple": "output = (1, 2)",
    "a string": "output = 'ab'",
    "a float": "output = [1.5]",
    "augmented": "output = [1]\noutput += [2]",
    "two targets": "a = output = [1]",
    "a docstring": '"""doc"""\noutput = [1]',
    "a subscript target": "output = [1]\noutput[0] = 2",
    "a constant product": "output = [2 * 3]",
    "list times list": "output = [1] * [2]",
    "the return outside a function": "return [1]",
}


@pytest.fixture(scope="module")
def sandbox():
    with SandboxPool(workers=1, prelude=CHECK_SOURCE) as pool:
        yield pool


def _in_sandbox(pool: SandboxPool, code: str) -> dict:
    return _status(pool.run(SandboxJob("", "kt_check", [code, KEEP])), KEEP)


@pytest.mark.parametrize("code", IN_SUBSET.values(), ids=IN_SUBSET.keys())
def test_the_status_is_the_sandboxs(sandbox: SandboxPool, code: str) -> None:
    status = literal_status(code, KEEP)
    assert status is not None
    assert status == _in_sandbox(sandbox, code)


@pytest.mark.parametrize("code", OUTSIDE.values(), ids=OUTSIDE.keys())
def test_anything_else_is_left_to_the_sandbox(code: str) -> None:
    assert literal_status(code, KEEP) is None


def test_what_a_program_builds_here_is_bounded() -> None:
    assert literal_status(f"output = [0] * {MAX_ELEMENTS + 1}", KEEP) is None
    doubling = "a0 = [0] * 1000\n" + "\n".join(f"a{i + 1} = a{i} + a{i}" for i in range(40)) + "\noutput = a40"
    assert literal_status(doubling, KEEP) is None  # 2**40 elements: the sandbox's memory limit decides
    assert literal_status("output = [1] * " + "9" * 30, KEEP) is None


def test_a_candidates_warnings_stay_out_of_this_process(capsys: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert literal_status("x = 1 is 1\noutput = [1]", KEEP) is None  # SyntaxWarning
        assert literal_status("s = '\\d'\noutput = [1]", KEEP) is None  # DeprecationWarning
    assert not seen and capsys.readouterr().err == ""
