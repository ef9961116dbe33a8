"""R_math: how pseudo-mathematical a word problem reads (NL paper §3.3, App. D).

R_math is the fraction of a word problem's words that belong to a curated arithmetic lexicon. The paper finds it the
strongest predictor of round-trip success after model size: problems phrased with operation verbs ("add", "split"),
multiplicative quantifiers ("each", "per", "twice") and explicit sequencing ("first", "then", "result") decode more
reliably than free narrative. The lexicon below groups words by the operation they signal, plus the words that
order the steps; it leaves out words every problem uses whatever its structure ("how", "many", "number").
"""

from __future__ import annotations

import re

from dsl.expr.prompts import PLACEHOLDER

_ADDITION = (
    "add adds added adding addition plus sum sums summed total totals totaled together combined combine combines "
    "altogether more increase increases increased increasing extra additional another gain gains gained raise raises "
    "raised grow grows grew join joins joined"
)
_SUBTRACTION = (
    "minus subtract subtracts subtracted subtracting subtraction less fewer difference remain remains remained "
    "remaining remainder left take takes took taken away decrease decreases decreased lose loses lost reduce reduces "
    "reduced remove removes removed spend spends spent"
)
_MULTIPLICATION = (
    "times multiply multiplies multiplied multiplying multiplication product each per every twice double doubles "
    "doubled triple triples tripled factor scale scaled"
)
_DIVISION = (
    "divide divides divided dividing division split splits share shares shared equally equal evenly quotient ratio "
    "half halves third thirds quarter quarters groups group portion portions distribute distributes distributed among "
    "fraction"
)
_STRUCTURE = (
    "result results resulting step steps first second then next finally last calculate compute computed value "
    "equals quantity amount"
)

ARITHMETIC_LEXICON: frozenset[str] = frozenset(
    " ".join((_ADDITION, _SUBTRACTION, _MULTIPLICATION, _DIVISION, _STRUCTURE)).split()
)

_PLACEHOLDER = re.compile(PLACEHOLDER)
_WORD = re.compile(r"[a-z]+")


def r_math(text: str) -> float:
    """Fraction of the word tokens (``[a-z]+`` of the lower-cased text, placeholders removed) in the lexicon.

    0.0 for a text without words.
    """
    words = _WORD.findall(_PLACEHOLDER.sub(" ", text).lower())
    if not words:
        return 0.0
    return sum(word in ARITHMETIC_LEXICON for word in words) / len(words)


__all__ = ["ARITHMETIC_LEXICON", "r_math"]
