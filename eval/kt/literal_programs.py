"""Judge the simplest candidates without running them: programs that only assign list literals.

Prompted models often answer with the sequence itself (`output = [3, 1, 4]`) or with a few literal parts that are
concatenated (paper 003, §5.3). Such a program runs nothing: its `output` follows from its syntax tree. This module
evaluates that subset statically (assignments to plain names of int lists, names already assigned, `+` of two lists
and `*` by an int literal), within an element budget, and parses every candidate once so that syntax errors need no
process either. A program outside the subset, or too large, returns None and is run in the sandbox as before; the
statuses given here are exactly those the sandbox's checking function gives (`eval.kt.python_runner`), and nothing
of a candidate is ever executed in this process.
"""

from __future__ import annotations

import ast
import keyword
import re
import warnings
from typing import Any

MAX_CODE_CHARS = 1 << 20  # larger programs go to the sandbox (whose limits bound what parsing them costs)
MAX_ELEMENTS = 2_000_000  # list elements a program may build here, all assignments together
_SYNTAX_ERRORS = (SyntaxError,)  # IndentationError and TabError are subclasses
FILENAME = "<candidate>"  # the name the sandbox compiles candidates under: the same error messages


_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*(?:\[([ \t0-9+,-]*)\]|([A-Za-z_][A-Za-z0-9_ \t+]*?))[ \t]*")
_INT = re.compile(r"[ \t]*[-+]?(?:0|[1-9][0-9]*)[ \t]*")


class _OutsideSubset(Exception):
    """The program does more than assign list literals: it must run in the sandbox."""


class _Evaluator:
    def __init__(self) -> None:
        self.names: dict[str, list[int]] = {}
        self.budget = MAX_ELEMENTS

    def _spend(self, count: int) -> None:
        self.budget -= count
        if self.budget < 0:
            raise _OutsideSubset

    def _int(self, node: ast.expr) -> int:
        if isinstance(node, ast.Constant) and type(node.value) in (int, bool):
            return int(node.value)
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub | ast.UAdd)
            and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) is int
        ):
            return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
        raise _OutsideSubset

    def value(self, node: ast.expr) -> list[int]:
        if isinstance(node, ast.List) and isinstance(node.ctx, ast.Load):
            self._spend(len(node.elts))
            return [self._int(element) for element in node.elts]
        if isinstance(node, ast.Name) and node.id in self.names:
            return self.names[node.id]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left), self.value(node.right)
            self._spend(len(left) + len(right))
            return left + right
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            constant_first = isinstance(node.left, ast.Constant | ast.UnaryOp)
            listed, times = (node.right, node.left) if constant_first else (node.left, node.right)
            items, count = self.value(listed), self._int(times)
            self._spend(len(items) * max(count, 0))
            return items * count
        raise _OutsideSubset

    def run(self, tree: ast.Module) -> None:
        for statement in tree.body:
            if not (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id != "__debug__"  # the compiler refuses it after parsing
            ):
                raise _OutsideSubset
            self.names[statement.targets[0].id] = self.value(statement.value)


def _plain_lines(code: str) -> dict[str, list[int]] | None:
    """The names a program assigns if each of its lines is `name = [ints]` or `name = a + b + ...` in the plainest
    spelling (what prompted models write); None for anything else, which the syntax tree then decides."""
    if "\r" in code:
        return None
    names: dict[str, list[int]] = {}
    budget = MAX_ELEMENTS
    for line in code.split("\n"):
        if not line.strip(" \t"):
            continue
        match = _LINE.fullmatch(line)
        if match is None or keyword.iskeyword(match[1]) or match[1] == "__debug__":
            return None
        if match[2] is not None:
            if not match[2].strip(" \t"):
                value = []
            else:
                items = match[2].split(",")
                if len(items) > 1 and not items[-1].strip(" \t"):
                    items.pop()  # one trailing comma
                if not all(_INT.fullmatch(item) for item in items):
                    return None  # "[,]", "[1,,2]", "[01]": the parser decides
                value = [int(item) for item in items]
        else:
            parts = [part.strip(" \t") for part in match[3].split("+")]
            if not all(part in names for part in parts):
                return None
            value = [v for part in parts for v in names[part]]
        budget -= len(value)
        if budget < 0:
            return None
        names[match[1]] = value
    return names


def literal_status(code: str, keep: int) -> dict[str, Any] | None:
    """The checking status of `code` (as the sandbox would report it, the first `keep` values of `output`) if it
    is a syntax error or assigns list literals only; None if it must run."""
    if len(code) > MAX_CODE_CHARS:
        return None
    try:
        names = _plain_lines(code)
    except ValueError:  # an int over the interpreter's digit limit: its parser says what happens
        names = None
    if names is not None:
        return _status(names, keep)
    if "(" in code or ":" in code:  # calls, definitions, blocks: outside the subset, whatever its syntax
        return None
    try:
        with warnings.catch_warnings():  # a candidate's SyntaxWarnings are not this process's business
            warnings.simplefilter("ignore")
            tree = ast.parse(code, FILENAME)
    except _SYNTAX_ERRORS as exc:
        return {"status": "error", "type": type(exc).__name__, "message": str(exc)[:2000]}
    except (ValueError, MemoryError, RecursionError):  # e.g. null bytes: let the sandbox report it
        return None
    evaluator = _Evaluator()
    try:
        evaluator.run(tree)
    except _OutsideSubset:
        return None
    return _status(evaluator.names, keep)


def _status(names: dict[str, list[int]], keep: int) -> dict[str, Any]:
    if "output" not in names:
        return {"status": "no_output"}
    output = names["output"]
    return {"status": "ok", "output": output[:keep], "length": len(output)}


__all__ = ["MAX_CODE_CHARS", "MAX_ELEMENTS", "literal_status"]
