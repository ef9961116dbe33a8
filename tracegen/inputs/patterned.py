"""Patterned strings: 15 categories, from highly compressible runs to high-entropy noise."""

from __future__ import annotations

import random
import string
from collections.abc import Callable

Generated = tuple[str, dict]

UPPER = string.ascii_uppercase
ALNUM = string.ascii_uppercase + string.digits
PRINTABLE = "".join(chr(c) for c in range(33, 127)) + " "
KEYBOARD_ROWS = ("QWERTYUIOP", "ASDFGHJKL", "ZXCVBNM", "1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm")
PANGRAMS = (
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG",
    "PACK MY BOX WITH FIVE DOZEN LIQUOR JUGS",
    "SPHINX OF BLACK QUARTZ JUDGE MY VOW",
    "HOW VEXINGLY QUICK DAFT ZEBRAS JUMP",
    "THE FIVE BOXING WIZARDS JUMP QUICKLY",
    "JACKDAWS LOVE MY BIG SPHINX OF QUARTZ",
)
SUBJECTS = ("the encoder", "a decoder", "the parser", "this model", "the compressor", "our service", "the scheduler")
VERBS = ("reads", "writes", "compresses", "validates", "stores", "streams", "rebuilds", "counts")
OBJECTS = ("every byte", "the input buffer", "repeated symbols", "a frequency table", "the log file", "short strings")
ENDINGS = ("quickly", "without loss", "in one pass", "on each request", "before midnight", "with care")


def _letters(rng: random.Random, k: int, alphabet: str = UPPER) -> str:
    return "".join(rng.choices(alphabet, k=k))


def repeated_char(rng: random.Random) -> Generated:
    """One character repeated: `UUUUUUUU`."""
    char, n = rng.choice(UPPER), rng.randint(4, 40)
    return char * n, {"char": char, "repeat": n}


def alternating_pattern(rng: random.Random) -> Generated:
    """Two or three symbols alternating: `ABABAB`."""
    unit = "".join(rng.sample(UPPER, rng.randint(2, 3)))
    n = rng.randint(3, 20)
    return unit * n, {"unit": unit, "repeat": n}


def block_pattern(rng: random.Random) -> Generated:
    """Runs of characters forming a block, repeated: `CCCGGGCCCGGG`."""
    chars = rng.sample("ACGTXYZ", rng.randint(2, 3))
    block = "".join(c * rng.randint(2, 5) for c in chars)
    n = rng.randint(2, 6)
    return block * n, {"block": block, "repeat": n}


def nested_repeat(rng: random.Random) -> Generated:
    """A base, its mirror and the base again, repeated: `PESSEPPES...`."""
    base = _letters(rng, rng.randint(2, 4))
    n = rng.randint(2, 5)
    return (base + base[::-1] + base) * n, {"base": base, "repeat": n}


def palindrome(rng: random.Random) -> Generated:
    """An exact palindrome, odd or even length."""
    half = _letters(rng, rng.randint(3, 12))
    middle = rng.choice(["", rng.choice(UPPER)])
    return half + middle + half[::-1], {"half": half}


def near_palindrome(rng: random.Random) -> Generated:
    """A palindrome with one position changed."""
    half = _letters(rng, rng.randint(4, 12))
    chars = list(half + half[::-1])
    pos = rng.randrange(len(chars))
    chars[pos] = rng.choice([c for c in UPPER if c != chars[pos]])
    return "".join(chars), {"changed_position": pos}


def pangram(rng: random.Random) -> Generated:
    """A pangram in upper case, lower case or with a word separator."""
    text = rng.choice(PANGRAMS)
    style = rng.choice(["upper", "lower", "title", "underscore", "nospace"])
    if style == "lower":
        text = text.lower()
    elif style == "title":
        text = text.title()
    elif style == "underscore":
        text = text.replace(" ", "_")
    elif style == "nospace":
        text = text.replace(" ", "")
    end = rng.choice(("", ".", "!"))
    return text + end, {"style": style}


def pangram_shuffled(rng: random.Random) -> Generated:
    """A subset of pangram words in shuffled order: `FOX BROWN LAZY QUICK JUMPS`."""
    words = rng.choice(PANGRAMS).split()
    k = rng.randint(3, len(words))
    return " ".join(rng.sample(words, k)), {"words": k}


def keyboard_sequence(rng: random.Random) -> Generated:
    """A keyboard row or a slice of one, forwards or backwards: `QWERTYUIOP`."""
    row = rng.choice(KEYBOARD_ROWS)
    start = rng.randint(0, len(row) - 4)
    chunk = row[start : rng.randint(start + 4, len(row))]
    reverse = rng.random() < 0.5
    return (chunk[::-1] if reverse else chunk), {"row": row, "reversed": reverse}


def keyboard_repeat(rng: random.Random) -> Generated:
    """A keyboard slice repeated a few times."""
    row = rng.choice(KEYBOARD_ROWS)
    start = rng.randint(0, len(row) - 3)
    chunk = row[start : rng.randint(start + 3, len(row))]
    n = rng.randint(2, 6)
    return chunk * n, {"chunk": chunk, "repeat": n}


def pseudo_random_tokens(rng: random.Random) -> Generated:
    """Random alphanumerics with one token inserted several times."""
    token = _letters(rng, 4, ALNUM)
    text = _letters(rng, rng.randint(6, 30), ALNUM)
    copies = rng.randint(2, 4)
    for _ in range(copies):
        pos = rng.randint(0, len(text))
        text = text[:pos] + token + text[pos:]
    return text, {"token": token, "copies": copies}


def _sentence(rng: random.Random) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(ENDINGS)}"


def natural_sentence(rng: random.Random) -> Generated:
    """A short natural-language sentence."""
    text = _sentence(rng)
    if rng.random() < 0.5:
        text = text.capitalize() + "."
    return text, {}


def repeated_sentence(rng: random.Random) -> Generated:
    """One sentence repeated two to four times."""
    sentence, n = _sentence(rng), rng.randint(2, 4)
    sep = rng.choice([" ", ". ", "\n"])
    return sep.join([sentence] * n), {"repeat": n}


def random_with_motif(rng: random.Random) -> Generated:
    """High-entropy printable characters with a lowercase motif embedded."""
    noise = "".join(rng.choices(PRINTABLE, k=rng.randint(20, 90)))
    motif = _letters(rng, 5, string.ascii_lowercase)
    pos = rng.randint(0, len(noise))
    return noise[:pos] + motif + noise[pos:], {"motif": motif}


def filler_unique(rng: random.Random) -> Generated:
    """Letters and digits with no symbol repeated: nothing for a compressor to exploit."""
    n = rng.randint(12, 30)
    return "".join(rng.sample(string.ascii_letters + string.digits, n)), {"length": n}


GENERATORS: dict[str, Callable[[random.Random], Generated]] = {
    "repeated_char": repeated_char,
    "alternating_pattern": alternating_pattern,
    "block_pattern": block_pattern,
    "nested_repeat": nested_repeat,
    "palindrome": palindrome,
    "near_palindrome": near_palindrome,
    "pangram": pangram,
    "pangram_shuffled": pangram_shuffled,
    "keyboard_sequence": keyboard_sequence,
    "keyboard_repeat": keyboard_repeat,
    "pseudo_random_tokens": pseudo_random_tokens,
    "natural_sentence": natural_sentence,
    "repeated_sentence": repeated_sentence,
    "random_with_motif": random_with_motif,
    "filler_unique": filler_unique,
}
