"""GRPO rows of the NL round trip: the policy is the generator, prompted with an expression (pi_G^gamma) to write
a word problem that `nl_roundtrip_reward` (eval.rewards.nl) guards, extracts and judges.

Columns: `prompt` (chat: one user turn), `id`, `expression` (the S-expression the reward judges against), `domain`
and `format_pattern` (for `format_reward`: every placeholder of the expression occurs, and no `Expression:` or
`Answer:` line gives the answer away).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from dsl.expr.prompts import generator_prompt, placeholder
from dsl.expr.serialize import parse_sexpr


def word_problem_pattern(variables: Iterable[str]) -> str:
    """A regex (DOTALL) of a word problem holding each variable's placeholder and no answer line."""
    needs = "".join(f"(?=.*{re.escape(placeholder(name))})" for name in dict.fromkeys(variables))
    return rf"{needs}(?!(?im:.*^[ \t*_#>-]*(?:expression|answer)[ \t*_]*:)).*\S.*"


def nl_rl_rows(
    suite_rows: Iterable[dict[str, Any]], domain: str = "arithmetic", shots: int = 0
) -> list[dict[str, Any]]:
    """One generator row per suite row (`dsl.expr.suite`: `id`, `sexpr`, `infix`, `domain`) of `domain`, with
    `shots` generator exemplars (0..3); a row of another domain is an error. Assembly rows need only `sexpr`."""
    rows = []
    for row in suite_rows:
        if row.get("domain", domain) != domain:
            raise ValueError(f"suite row {row.get('id')!r} is {row['domain']}, not {domain}")
        node = parse_sexpr(row["sexpr"])
        shown = row["sexpr"] if domain == "assembly" else row["infix"]
        variables = [] if domain == "assembly" else node.variables()
        rows.append(
            {
                "prompt": [{"role": "user", "content": generator_prompt(shown, domain, shots)}],
                "id": str(row.get("id", row["sexpr"])),
                "expression": row["sexpr"],
                "domain": domain,
                "format_pattern": word_problem_pattern(variables),
            }
        )
    return rows


__all__ = ["nl_rl_rows", "word_problem_pattern"]
