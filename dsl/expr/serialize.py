"""Serializers and parsers for expression trees: infix (per-domain syntax), S-expressions and a JSON AST.

Infix parsing is a tokenizer plus a precedence-climbing parser (never ``eval``): every binary operator is
left-associative, parentheses and brackets group, and a syntax may accept aliases (``×`` for ``*``), juxtaposition as
an operator (``2A``, ``2(A + B)``) and a unary minus (``-A`` parsed as the op ``"neg"``). S-expressions and the JSON
AST are generic over operator arity and round-trip any tree exactly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from dsl.expr.tree import Node, leaf, op

NEG = "neg"
_NEG_SYMBOL = "-"
_OPEN = {"(": ")", "[": "]"}
_CLOSE = frozenset(_OPEN.values())
_INT_RE = re.compile(r"[0-9]+")
_SEXPR_INT_RE = re.compile(r"-?[0-9]+")


@dataclass(frozen=True)
class InfixSyntax:
    """How a domain writes binary operators in infix form (all left-associative)."""

    symbols: dict[str, str] = field(metadata={"help": "op name -> printed symbol"})
    precedence: dict[str, int] = field(metadata={"help": "op name -> precedence (higher binds tighter)"})
    associative: frozenset[str] = field(
        default=frozenset(),
        metadata={"help": "ops whose right operand of the same op may drop parentheses when flattening"},
    )
    aliases: dict[str, str] = field(default_factory=dict, metadata={"help": "extra accepted spelling -> op name"})
    implicit_multiplication: str | None = field(
        default=None, metadata={"help": "op name for juxtaposition (2A, 2(A+B), (A)(B)); None disables it"}
    )
    variable_pattern: str = field(default="[A-Z]", metadata={"help": "regex matching one variable token"})
    unary_minus: bool = field(default=False, metadata={"help": "accept -x as the op 'neg' applied to x"})

    def __post_init__(self) -> None:
        if not self.symbols:
            raise ValueError("symbols must name at least one operator")
        if set(self.precedence) != set(self.symbols):
            raise ValueError("precedence must give a level for exactly the ops in symbols")
        if any(not s or s.isspace() or any(c in "()[]" or c.isspace() for c in s) for s in self.symbols.values()):
            raise ValueError("symbols must be non-empty, without whitespace or brackets")
        if len(set(self.symbols.values())) != len(self.symbols):
            raise ValueError("symbols must be distinct")
        if not self.associative <= set(self.symbols):
            raise ValueError("associative names ops not in symbols")
        unknown = {name for name in self.aliases.values() if name not in self.symbols}
        if unknown:
            raise ValueError(f"aliases map to unknown ops {sorted(unknown)}")
        if self.implicit_multiplication is not None and self.implicit_multiplication not in self.symbols:
            raise ValueError(f"implicit_multiplication {self.implicit_multiplication!r} is not an op in symbols")
        try:
            re.compile(self.variable_pattern)
        except re.error as exc:
            raise ValueError(f"variable_pattern is not a valid regex: {exc}") from exc
        if self.unary_minus and self.symbols.get("-", _NEG_SYMBOL) != _NEG_SYMBOL:
            raise ValueError("unary_minus needs '-' to be free or the symbol of the op '-'")

    def spellings(self) -> dict[str, str]:
        """Every accepted operator spelling (symbols and aliases) -> op name."""
        return {**{s: name for name, s in self.symbols.items()}, **self.aliases}


ARITHMETIC = InfixSyntax(
    symbols={"+": "+", "-": "-", "*": "*", "/": "/"},
    precedence={"+": 1, "-": 1, "*": 2, "/": 2},
    associative=frozenset({"+", "*"}),
    aliases={"×": "*", "÷": "/", "−": "-", "⋅": "*", "·": "*"},
    implicit_multiplication="*",
    unary_minus=True,
)


# ---------------------------------------------------------------------------------------------------- infix printing


def _leaf_text(node: Node) -> str:
    return str(node.value)


def to_infix(node: Node, syntax: InfixSyntax, *, flatten_associative: bool = False) -> str:
    """Infix text with the fewest parentheses that keep the tree: ``parse_infix(to_infix(t)) == t``.

    A left operand is parenthesized only when it binds looser; a right operand also when it has the same precedence
    (``A - (B - C)``, ``A + (B + C)``). With ``flatten_associative`` a right operand that is the same associative op
    drops them too (``A + B + C``): the value is kept but the re-parsed tree is left-nested instead.
    """
    if node.is_leaf:
        return _leaf_text(node)
    assert node.op is not None
    if len(node.children) == 1:
        if node.op != NEG or not syntax.unary_minus:
            raise ValueError(f"unary op {node.op!r} has no infix form in this syntax")
        (child,) = node.children
        inner = to_infix(child, syntax, flatten_associative=flatten_associative)
        return f"-{inner}" if child.is_leaf or child.op == NEG else f"-({inner})"
    if len(node.children) != 2:
        raise ValueError(f"op {node.op!r} has {len(node.children)} operands; infix needs binary ops")
    if node.op not in syntax.symbols:
        raise ValueError(f"op {node.op!r} has no symbol in this syntax")
    level = syntax.precedence[node.op]
    left, right = node.children
    left_text = to_infix(left, syntax, flatten_associative=flatten_associative)
    right_text = to_infix(right, syntax, flatten_associative=flatten_associative)
    if _is_binary(left) and syntax.precedence[left.op] < level:  # type: ignore[index]
        left_text = f"({left_text})"
    if _is_binary(right):
        right_level = syntax.precedence[right.op]  # type: ignore[index]
        flat = flatten_associative and right.op == node.op and node.op in syntax.associative
        if right_level < level or (right_level == level and not flat):
            right_text = f"({right_text})"
    return f"{left_text} {syntax.symbols[node.op]} {right_text}"


def _is_binary(node: Node) -> bool:
    return not node.is_leaf and len(node.children) == 2


# ---------------------------------------------------------------------------------------------------- infix parsing


@dataclass(frozen=True)
class _Token:
    kind: str  # "int", "var", "op", "open", "close"
    text: str
    pos: int
    op: str | None = None


def _tokenize(text: str, syntax: InfixSyntax) -> list[_Token]:
    spellings = syntax.spellings()
    ordered = sorted(spellings, key=len, reverse=True)
    variable_re = re.compile(syntax.variable_pattern)
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char.isspace():
            pos += 1
            continue
        if char in _OPEN:
            tokens.append(_Token("open", char, pos))
            pos += 1
            continue
        if char in _CLOSE:
            tokens.append(_Token("close", char, pos))
            pos += 1
            continue
        number = _INT_RE.match(text, pos)
        if number:
            tokens.append(_Token("int", number.group(), pos))
            pos = number.end()
            continue
        symbol = next((s for s in ordered if text.startswith(s, pos)), None)
        variable = variable_re.match(text, pos)
        variable_len = len(variable.group()) if variable else 0
        if symbol is not None and len(symbol) >= variable_len:
            tokens.append(_Token("op", symbol, pos, spellings[symbol]))
            pos += len(symbol)
        elif variable_len:
            tokens.append(_Token("var", variable.group(), pos))  # type: ignore[union-attr]
            pos += variable_len
        elif syntax.unary_minus and char == _NEG_SYMBOL:
            tokens.append(_Token("op", char, pos, None))
            pos += 1
        else:
            raise ValueError(f"unexpected character {char!r} at position {pos} in {text!r}")
    return tokens


class _Parser:
    """Precedence climbing over a token list."""

    def __init__(self, text: str, syntax: InfixSyntax) -> None:
        self.text = text
        self.syntax = syntax
        self.tokens = _tokenize(text, syntax)
        self.index = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def error(self, message: str, token: _Token | None) -> ValueError:
        where = f"at position {token.pos}" if token is not None else "at end of input"
        return ValueError(f"{message} {where} in {self.text!r}")

    def parse(self) -> Node:
        if not self.tokens:
            raise ValueError(f"empty expression: {self.text!r}")
        node = self.expression(0)
        token = self.peek()
        if token is not None:
            raise self.error(f"unexpected {token.text!r}", token)
        return node

    def binary_op(self) -> str | None:
        """The op of the next binary operator (explicit or implicit), without consuming it."""
        token = self.peek()
        if token is None:
            return None
        if token.kind == "op" and token.op in self.syntax.symbols:
            return token.op
        implicit = self.syntax.implicit_multiplication
        if implicit is not None and (token.kind == "var" or token.kind == "open"):
            return implicit
        return None

    def expression(self, min_level: int) -> Node:
        left = self.unary()
        while True:
            name = self.binary_op()
            if name is None or self.syntax.precedence[name] < min_level:
                return left
            token = self.peek()
            assert token is not None
            if token.kind == "op":
                self.index += 1
            right = self.expression(self.syntax.precedence[name] + 1)
            left = op(name, left, right)

    def unary(self) -> Node:
        token = self.peek()
        minus = token is not None and token.kind == "op" and (token.op is None or token.op == _NEG_SYMBOL)
        if minus and self.syntax.unary_minus:
            self.index += 1
            return op(NEG, self.unary())
        return self.primary()

    def primary(self) -> Node:
        token = self.peek()
        if token is None:
            raise self.error("expected an operand", None)
        self.index += 1
        if token.kind == "int":
            return leaf(int(token.text))
        if token.kind == "var":
            return leaf(token.text)
        if token.kind == "open":
            inner = self.expression(0)
            close = self.peek()
            if close is None or close.kind != "close":
                raise self.error(f"unbalanced {token.text!r} (opened at position {token.pos})", close)
            if close.text != _OPEN[token.text]:
                raise self.error(f"{close.text!r} does not close {token.text!r}", close)
            self.index += 1
            return inner
        raise self.error(f"expected an operand, got {token.text!r}", token)


def parse_infix(text: str, syntax: InfixSyntax) -> Node:
    """Parse infix text into a tree; raises ValueError on anything that is not a well-formed expression."""
    return _Parser(text, syntax).parse()


# ---------------------------------------------------------------------------------------------------- S-expressions


def _atom_text(value: str | int) -> str:
    text = str(value)
    if not text or any(c.isspace() or c in "()" for c in text):
        raise ValueError(f"{value!r} cannot be written as an S-expression atom")
    if isinstance(value, str) and _SEXPR_INT_RE.fullmatch(text):
        raise ValueError(f"variable {value!r} would read back as an integer")
    return text


def to_sexpr(node: Node) -> str:
    """``(+ A (* B 3))``; leaves bare; any arity."""
    if node.is_leaf:
        return _atom_text(node.value)  # type: ignore[arg-type]
    parts = [_atom_text(node.op)]  # type: ignore[arg-type]
    parts.extend(to_sexpr(child) for child in node.children)
    return "(" + " ".join(parts) + ")"


_SEXPR_TOKEN = re.compile(r"\s*(?:(\()|(\))|([^\s()]+))")


def parse_sexpr(text: str) -> Node:
    """Inverse of :func:`to_sexpr`: integer atoms (optional leading ``-``) become ints, other atoms strings."""
    tokens: list[str] = []
    pos = 0
    stripped_end = len(text.rstrip())
    while pos < stripped_end:
        match = _SEXPR_TOKEN.match(text, pos)
        if match is None:  # pragma: no cover - the pattern matches any non-space run
            raise ValueError(f"cannot read S-expression at position {pos} in {text!r}")
        tokens.append(match.group(match.lastindex))  # type: ignore[arg-type]
        pos = match.end()
    if not tokens:
        raise ValueError(f"empty S-expression: {text!r}")
    index = 0

    def atom(token: str) -> str | int:
        return int(token) if _SEXPR_INT_RE.fullmatch(token) else token

    def read() -> Node:
        nonlocal index
        if index >= len(tokens):
            raise ValueError(f"unbalanced S-expression (missing ')'): {text!r}")
        token = tokens[index]
        index += 1
        if token == ")":
            raise ValueError(f"unexpected ')' in S-expression {text!r}")
        if token != "(":
            return leaf(atom(token))
        if index >= len(tokens) or tokens[index] in "()":
            raise ValueError(f"an S-expression list must start with an operator name: {text!r}")
        name = tokens[index]
        index += 1
        children: list[Node] = []
        while index < len(tokens) and tokens[index] != ")":
            children.append(read())
        if index >= len(tokens):
            raise ValueError(f"unbalanced S-expression (missing ')'): {text!r}")
        index += 1
        if not children:
            raise ValueError(f"operator {name!r} has no operands in {text!r}")
        return op(name, *children)

    node = read()
    if index != len(tokens):
        raise ValueError(f"trailing tokens after the S-expression: {text!r}")
    return node


# ---------------------------------------------------------------------------------------------------- JSON AST


def _to_json_obj(node: Node) -> dict[str, Any]:
    if node.is_leaf:
        return {"const": node.value} if isinstance(node.value, int) else {"var": node.value}
    return {"op": node.op, "args": [_to_json_obj(child) for child in node.children]}


def to_json_ast(node: Node) -> str:
    """One-line deterministic JSON: ``{"op": "+", "args": [{"var": "A"}, {"const": 3}]}``."""
    return json.dumps(_to_json_obj(node), ensure_ascii=False)


def _from_json_obj(obj: Any) -> Node:
    if not isinstance(obj, dict):
        raise ValueError(f"JSON AST node must be an object, got {type(obj).__name__}")
    keys = set(obj)
    if keys == {"var"}:
        if not isinstance(obj["var"], str) or not obj["var"]:
            raise ValueError(f"'var' must be a non-empty string, got {obj['var']!r}")
        return leaf(obj["var"])
    if keys == {"const"}:
        if not isinstance(obj["const"], int) or isinstance(obj["const"], bool):
            raise ValueError(f"'const' must be an integer, got {obj['const']!r}")
        return leaf(obj["const"])
    if keys == {"op", "args"}:
        if not isinstance(obj["op"], str) or not obj["op"]:
            raise ValueError(f"'op' must be a non-empty string, got {obj['op']!r}")
        if not isinstance(obj["args"], list) or not obj["args"]:
            raise ValueError(f"'args' of {obj['op']!r} must be a non-empty list")
        return op(obj["op"], *(_from_json_obj(arg) for arg in obj["args"]))
    raise ValueError(f"JSON AST node needs keys 'var', 'const' or 'op'+'args', got {sorted(keys)}")


def parse_json_ast(text: str) -> Node:
    """Inverse of :func:`to_json_ast`, validating the structure."""
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        raise ValueError(f"not valid JSON: {exc}") from exc
    return _from_json_obj(obj)


__all__ = [
    "ARITHMETIC",
    "NEG",
    "InfixSyntax",
    "parse_infix",
    "parse_json_ast",
    "parse_sexpr",
    "to_infix",
    "to_json_ast",
    "to_sexpr",
]
