"""The RTCE prompt styles: `paper` (default), `release-blind` and `demo`, each rendered and pinned."""

from __future__ import annotations

import copy
import hashlib
import re

import pytest

from tracegen.algorithms import ALGORITHMS
from tracegen.prompts import PROMPT_STYLES, SYSTEM_MESSAGE, blind_source
from tracegen.tasks import TASKS, Task, make_task, system_message

TEXTS = ["ABAB", "AAAB", "hello world", "a\nb: 1\n"]

# sha256 of every prompt for LZW on "ABAB" (and Huffman for the triple), per style and task. A change here changes
# what models are asked: update the pins only on purpose, and say so in the change.
PINS = {
    ("paper", "lzw"): {
        "output_pred": "c786f3c923ef56bd",
        "output_pred_inv": "72e01f394b7344ee",
        "input_pred": "4e300680e5d5210b",
        "input_pred_inv": "e9a4b998fd32986b",
    },
    ("paper", "huffman"): {
        "output_pred": "ea22f37571b6ac12",
        "output_pred_inv": "37253c0c8e6272e8",
        "input_pred": "9e7bdffcf44427dc",
        "input_pred_inv": "3aacd5397daef917",
    },
    ("release-blind", "lzw"): {
        "output_pred": "f79a3c5bd3d9d8a0",
        "output_pred_inv": "29fb52c24da7a111",
        "input_pred": "c9f9cb68c392ecaf",
        "input_pred_inv": "dca9328ac26a2034",
    },
    ("release-blind", "huffman"): {
        "output_pred": "2bab404b247a6d13",
        "output_pred_inv": "c937a95269416ce7",
        "input_pred": "9d5e2816146f8181",
        "input_pred_inv": "dbc2aec64b8251cc",
    },
    ("demo", "lzw"): {
        "output_pred": "19c08948e23ed0d0",
        "output_pred_inv": "7982581231491ac7",
        "input_pred": "73f770aeec8a1da2",
        "input_pred_inv": "72c3ed97b6d6ea4a",
    },
    ("demo", "huffman"): {
        "output_pred": "ae14483ca34bb04f",
        "output_pred_inv": "5d4bc313e6219904",
        "input_pred": "6ee1e1f4179d58a4",
        "input_pred_inv": "56b43243c6f682a2",
    },
}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _run(source: str, value: object) -> object:
    namespace: dict[str, object] = {}
    exec(source, namespace)  # our own listings, trusted
    return namespace["main_solution"](value)  # type: ignore[operator]


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
@pytest.mark.parametrize("text", TEXTS)
def test_blinded_listings_compute_the_same(name: str, text: str) -> None:
    algorithm = ALGORITHMS[name]
    freq = algorithm.freq(text)
    encoder, decoder = algorithm.encoder_source(freq), algorithm.decoder_source(freq)
    z = _run(encoder, text)
    assert _run(blind_source(algorithm, encoder), text) == z
    if algorithm.exact(text):
        assert _run(blind_source(algorithm, decoder), copy.deepcopy(z)) == _run(decoder, copy.deepcopy(z)) == text


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_blind_prompts_name_no_algorithm_and_no_telling_identifier(name: str) -> None:
    for task in TASKS:
        prompt = make_task(ALGORITHMS[name], task, "ABAB", "release-blind").prompt
        assert not re.search(r"LZW|Huffman|[Aa]rithmetic|run-length|RLE", prompt), (task, prompt)
        assert not re.search(r"\b(uncompressed|compressed|dictionary|codebook|cum_counts|prev_char)\b", prompt)
        assert "def main_solution(x):" in prompt


@pytest.mark.parametrize("task", TASKS)
def test_paper_prompt_has_one_generic_example_and_the_typed_query(task: Task) -> None:
    algorithm = ALGORITHMS["rle"]
    record = make_task(algorithm, task, "AAAB")
    prompt = record.prompt
    assert prompt.count("[THOUGHT]") == 1 and prompt.count("[PYTHON]") == 2  # the example's function, then ours
    assert "def main_solution(word):" in prompt and "Worked example" not in prompt
    ours = prompt.index("def main_solution(", prompt.index("[/THOUGHT]"))
    assert prompt.index("def main_solution(word):") < ours and "(word)" not in prompt[ours:]
    given = "'AAAB'" if task.predicts_z else "[('A', 3), ('B', 1)]"  # Python literals, as the listing sees them
    assert f"\n\n{given}\n\n" in prompt
    wants = "list of [str, int] pairs" if task.predicts_z else 'str (e.g. "hello world")'
    assert f'The "output" value must be of type: {wants}' in prompt
    inverts = task in (Task.OUTPUT_PRED_INV, Task.INPUT_PRED_INV)
    assert ("main_solution_inverse" in prompt) == inverts
    assert prompt.rstrip().endswith('[ANSWER]\n{"output": <your answer>}\n[/ANSWER]')


def test_demo_style_is_the_same_task_demonstration() -> None:
    prompt = make_task(ALGORITHMS["lzw"], Task.OUTPUT_PRED, "ABAB", "demo").prompt
    assert "Worked example" in prompt and "[THOUGHT]" not in prompt
    assert system_message("demo") is None
    assert system_message("paper") == system_message("release-blind") == SYSTEM_MESSAGE


@pytest.mark.parametrize("style", PROMPT_STYLES)
@pytest.mark.parametrize("name", ["lzw", "huffman"])
def test_prompts_are_pinned(style: str, name: str) -> None:
    digests = {t.value: _digest(make_task(ALGORITHMS[name], t, "ABAB", style).prompt) for t in TASKS}  # type: ignore[arg-type]
    assert digests == PINS[(style, name)]
