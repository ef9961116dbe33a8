"""Arithmetic answers in the notations SymPy's parser reads, as expression trees, without ``eval``.

The oracle's own grammar (`dsl.expr.serialize.ARITHMETIC`) has no powers. Extractors write ``D**2``, ``D^2`` and
``D²`` for ``D * D``, with implicit products beside them (``2A``, ``2(A + B)``, ``AB^2``). `parse_sympy_notation`
reads these with SymPy's tokenizer and transformations (`stringify_expr`: ``^`` as power, implicit multiplication,
split symbols), then walks the resulting Python syntax tree (``ast.parse``, which runs nothing) into a `Node`:
``+ - * /``, unary minus, single capital letters, integers, and powers with an integer exponent written as repeated
products (``D**2`` is ``D * D``, ``D**-1`` is ``1 / D``). Anything else (other names, decimals, functions, symbolic
exponents, a character outside capitals, digits, operators and brackets) is a ValueError, as in the project parser.
"""

from __future__ import annotations

import ast
import re
import string
import unicodedata
from functools import reduce
from tokenize import TokenError

import sympy
from sympy.parsing.sympy_parser import (
    convert_xor,
    implicit_multiplication_application,
    standard_transformations,
    stringify_expr,
)

from dsl.expr.serialize import ARITHMETIC, NEG
from dsl.expr.tree import Node, leaf, op

MAX_EXPONENT = 64
TRANSFORMATIONS = (*standard_transformations, convert_xor, implicit_multiplication_application)

_SUPERSCRIPTS = re.compile(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻]+")
_OPERATOR_ALIASES = {alias: ARITHMETIC.symbols[name] for alias, name in ARITHMETIC.aliases.items()}
_ASCII = str.maketrans({**_OPERATOR_ALIASES, "[": "(", "]": ")", "{": "(", "}": ")"})
_ALLOWED = re.compile(r"[A-Z0-9\s+\-*/^()]+")
_AMBIGUOUS_NUMBERS = re.compile(r"\d\s+\d|(?<!\d)0\d")  # 2 3 (23? 2 * 3?), 0123
_VARIABLES = frozenset(string.ascii_uppercase)
_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_SYMPY_NAMES = {"Integer": sympy.Integer}  # what `auto_number` writes; known, so not taken for a product


def _ascii_notation(text: str) -> str:
    """Superscript runs as ``**(n)`` (``D²`` -> ``D**(2)``), operator aliases and brackets as ASCII."""
    powered = _SUPERSCRIPTS.sub(lambda match: f"**({unicodedata.normalize('NFKC', match.group())})", text)
    return powered.translate(_ASCII)


def _python_syntax(text: str) -> ast.expr:
    """The Python expression SymPy's transformations make of `text` (parsed, never run)."""
    local_names = {name: sympy.Symbol(name) for name in _VARIABLES}
    try:
        code = stringify_expr(text, local_names, dict(_SYMPY_NAMES), TRANSFORMATIONS)
        return ast.parse(code.strip(), mode="eval").body
    except (SyntaxError, TokenError, IndexError) as error:  # IndexError: SymPy's transformations on a stray ")"
        raise ValueError(f"not an expression SymPy reads: {error}") from None


def _integer(node: ast.expr) -> int | None:
    """The value of ``Integer(n)``, ``-Integer(n)`` or ``+Integer(n)``, else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _integer(node.operand)
        return None if value is None else -value if isinstance(node.op, ast.USub) else value
    is_integer = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Integer"
    if not is_integer or len(node.args) != 1 or node.keywords:
        return None
    (argument,) = node.args
    if isinstance(argument, ast.Constant) and type(argument.value) is int:
        return argument.value
    return None


def _power(base: Node, exponent: int) -> Node:
    """``base ** exponent`` as repeated products (``1 / ...`` for a negative exponent, 1 for 0)."""
    if abs(exponent) > MAX_EXPONENT:
        raise ValueError(f"exponent {exponent} is beyond +-{MAX_EXPONENT}")
    if exponent == 0:
        return leaf(1)
    product = reduce(lambda left, right: op("*", left, right), [base] * abs(exponent))
    return product if exponent > 0 else op("/", leaf(1), product)


def _tree(node: ast.expr) -> Node:
    """The expression tree of a transformed answer's Python syntax."""
    if isinstance(node, ast.Name) and node.id in _VARIABLES:
        return leaf(node.id)
    value = _integer(node)
    if value is not None:
        return leaf(value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _tree(node.operand)
        return op(NEG, operand) if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return op(_BINARY[type(node.op)], _tree(node.left), _tree(node.right))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        exponent = _integer(node.right)
        if exponent is None:
            raise ValueError(f"exponent {ast.unparse(node.right)!r} is not an integer")
        return _power(_tree(node.left), exponent)
    raise ValueError(f"{ast.unparse(node)!r} is not arithmetic over capital letters and integers")


def parse_sympy_notation(text: str) -> Node:
    """Parse an arithmetic answer written in SymPy's notations (powers, implicit products) into a tree."""
    ascii_text = _ascii_notation(text)
    if not _ALLOWED.fullmatch(ascii_text):
        raise ValueError(f"{text!r} has characters other than capitals, digits, operators and brackets")
    if _AMBIGUOUS_NUMBERS.search(ascii_text):
        raise ValueError(f"{text!r} has numbers side by side or a leading zero")
    return _tree(_python_syntax(ascii_text))


__all__ = ["MAX_EXPONENT", "TRANSFORMATIONS", "parse_sympy_notation"]
