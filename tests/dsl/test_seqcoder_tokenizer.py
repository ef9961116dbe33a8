"""The SeqCoder tokenizer: every corpus program round-trips with one token per DSL word, any text round-trips, and
the chat template shows the sequence alone and closes the program with </s>."""

from __future__ import annotations

import re

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from dsl.functions import FUNCTION_NAMES
from dsl.seqcoder import seqcoder_prompt, to_seqcoder_chat
from dsl.seqcoder_tokenizer import (
    CHAT_TEMPLATE,
    DIGIT_PIECES,
    MAX_NUMBER,
    MAX_SEQUENCE_NAMES,
    PIECES,
    seqcoder_tokenizer,
    sequence_marker,
    vocabulary,
)
from kt_train.cli import main as kt_main


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    out = tmp_path_factory.mktemp("seqcoder") / "corpus"
    args = ["dsl", "generate", "--num-pairs", "300", "--seed", "1", "--output", str(out), "--quiet", "--workers", "1"]
    assert kt_main(args) == 0
    return pq.ParquetDataset(sorted((out / "data").glob("*.parquet"))).read().to_pylist()


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> PreTrainedTokenizerBase:
    """The tokenizer as saved and loaded back by AutoTokenizer."""
    folder = tmp_path_factory.mktemp("tokenizer")
    seqcoder_tokenizer().save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


def round_trips(tokenizer: PreTrainedTokenizerBase, text: str) -> bool:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer.decode(ids, skip_special_tokens=False) == text


def test_every_corpus_program_round_trips_with_one_token_per_word(
    corpus: list[dict], tokenizer: PreTrainedTokenizerBase
) -> None:
    assert len(corpus) == 300
    for row in corpus:
        program = row["program"]
        assert round_trips(tokenizer, program), program
        pieces = re.findall(PIECES, program)
        assert "".join(pieces) == program
        assert tokenizer.tokenize(program) == pieces, program  # no word spelled with characters or bytes


def test_corpus_chats_round_trip(corpus: list[dict], tokenizer: PreTrainedTokenizerBase) -> None:
    for row in corpus[:50]:
        chat = to_seqcoder_chat(row)
        ids = tokenizer.apply_chat_template(chat["prompt"] + chat["completion"], return_dict=True)["input_ids"]
        numbers = " ".join(map(str, row["sequence"]))
        assert tokenizer.decode(ids) == f"<s><|user|>{numbers}<|assistant|>{row['program']}</s>"
        assert tokenizer.decode(ids, skip_special_tokens=True) == numbers + row["program"]


@pytest.mark.parametrize(
    "word",
    [
        *(str(n) for n in range(MAX_NUMBER + 1)),
        *FUNCTION_NAMES,
        "output",
        *(f"sequence_{k}" for k in range(1, MAX_SEQUENCE_NAMES + 1)),
        ", ",
        " = ",
    ],
)
def test_each_dsl_word_is_one_token(tokenizer: PreTrainedTokenizerBase, word: str) -> None:
    assert tokenizer.tokenize(word) == [word]
    assert tokenizer.tokenize(f"f({word})") == ["f", "(", word, ")"]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("300", ["3", "0", "0"]),
        ("-7", ["-", "7"]),
        ("007", ["0", "0", "7"]),
        (f"sequence_{MAX_SEQUENCE_NAMES + 1}", [*"sequence_", *str(MAX_SEQUENCE_NAMES + 1)]),
        ("outputs", [*"outputs"]),
        ("é", ["<0xC3>", "<0xA9>"]),
    ],
)
def test_other_text_is_spelled_out(tokenizer: PreTrainedTokenizerBase, text: str, tokens: list[str]) -> None:
    assert tokenizer.tokenize(text) == tokens
    assert round_trips(tokenizer, text)


TOKENIZER = seqcoder_tokenizer()


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_any_text_round_trips(text: str) -> None:
    assert round_trips(TOKENIZER, text)


def test_any_ids_decode(tokenizer: PreTrainedTokenizerBase) -> None:
    ids = list(range(len(tokenizer)))
    text = tokenizer.decode(ids[::-1], skip_special_tokens=True)
    assert "range_func_up" in text and "<s>" not in text
    assert tokenizer.decode([tokenizer.convert_tokens_to_ids("<0xC3>")]) == "\ufffd"  # a lone byte: U+FFFD


def test_vocabulary_ids_and_special_tokens(tokenizer: PreTrainedTokenizerBase) -> None:
    tokens = vocabulary()
    assert len(tokenizer) == len(tokens)
    assert [tokenizer.convert_tokens_to_ids(t) for t in tokens] == list(range(len(tokens)))
    assert (tokenizer.pad_token, tokenizer.bos_token, tokenizer.eos_token) == ("<pad>", "<s>", "</s>")
    assert tokenizer("sequence_1")["input_ids"] == [tokenizer.convert_tokens_to_ids("sequence_1")]  # nothing added


def test_template_shows_the_sequence_and_closes_the_program(tokenizer: PreTrainedTokenizerBase) -> None:
    assert tokenizer.chat_template == CHAT_TEMPLATE
    chat = to_seqcoder_chat({"sequence": [3, 4, 250], "program": "sequence_1 = set_list([3, 4, 250])\noutput = x"})
    prompt = tokenizer.apply_chat_template(chat["prompt"], tokenize=False, add_generation_prompt=True)
    assert prompt == "<s><|user|>3 4 250<|assistant|>"
    whole = tokenizer.apply_chat_template(chat["prompt"] + chat["completion"], tokenize=False)
    assert whole == prompt + chat["completion"][0]["content"] + "</s>"
    rendered = tokenizer.apply_chat_template(
        chat["prompt"] + chat["completion"], return_dict=True, return_assistant_tokens_mask=True
    )
    prompt_ids = tokenizer.apply_chat_template(chat["prompt"], add_generation_prompt=True, return_dict=True)
    start = len(prompt_ids["input_ids"])
    assert rendered["input_ids"][:start] == prompt_ids["input_ids"]  # TRL's completion starts here
    assert rendered["assistant_masks"] == [0] * start + [1] * (len(rendered["input_ids"]) - start)  # </s> included


def test_template_other_turns(tokenizer: PreTrainedTokenizerBase) -> None:
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "no marker here"}]
    text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    assert text == "<s><|system|>Be brief.<|user|>no marker here<|assistant|>"
    with pytest.raises(Exception, match="system, user and assistant"):
        tokenizer.apply_chat_template([{"role": "tool", "content": "x"}], tokenize=False)


def test_sequence_marker() -> None:
    assert sequence_marker() == "Sequence: "
    assert seqcoder_prompt([1, 2]).endswith(sequence_marker() + "1 2")
    assert sequence_marker("Do it.\nInput -> {sequence}") == "Input -> "
    for prompt in ("{sequence} is the sequence", "Do it.\n{sequence}", "no placeholder"):
        with pytest.raises(ValueError, match="sequence"):
            sequence_marker(prompt)


@pytest.fixture(scope="module")
def digit_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> PreTrainedTokenizerBase:
    folder = tmp_path_factory.mktemp("digits")
    seqcoder_tokenizer("digits").save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


def test_digits_spell_every_number_and_keep_the_other_words(
    corpus: list[dict], digit_tokenizer: PreTrainedTokenizerBase
) -> None:
    assert len(digit_tokenizer) == len(vocabulary("digits")) == len(vocabulary()) - (MAX_NUMBER + 1 - 10)
    assert digit_tokenizer.tokenize("range_func_up(136, 7)") == ["range_func_up", "(", "1", "3", "6", ", ", "7", ")"]
    assert digit_tokenizer.tokenize("sequence_12 = sequence_3") == ["sequence_12", " = ", "sequence_3"]
    for row in corpus:
        program = row["program"]
        assert round_trips(digit_tokenizer, program), program
        assert digit_tokenizer.tokenize(program) == re.findall(DIGIT_PIECES, program)
        chat = to_seqcoder_chat(row)
        ids = digit_tokenizer.apply_chat_template(chat["prompt"] + chat["completion"], return_dict=True)["input_ids"]
        numbers = " ".join(map(str, row["sequence"]))
        assert digit_tokenizer.decode(ids) == f"<s><|user|>{numbers}<|assistant|>{program}</s>"
        digits_in_program = sum(len(n) for n in re.findall(r"(?<![A-Za-z_0-9])[0-9]+", program))
        assert sum(t.isdigit() for t in digit_tokenizer.tokenize(program)) == digits_in_program


def test_an_unknown_number_style_is_refused() -> None:
    with pytest.raises(ValueError, match="numbers must be one of words, digits"):
        vocabulary("bytes")
