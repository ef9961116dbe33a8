"""The tokenizer of a SeqCoder trained from scratch (KT paper §4): one token per DSL word, any text round-trips.

A token is one of: each number 0..256 (values are bytes; 256 is the exclusive end `range_func_interval` can write),
each of the 24 function and predicate names, `output`, each `sequence_1` .. `sequence_128`, the separators `, ` and
` = `, each printable ASCII character and the newline, and the 256 byte tokens `<0x00>` .. `<0xFF>`. Text is split
into names, digit runs, ` = `, `, ` and single characters; a piece in the vocabulary is one token, any other is
spelled with its characters (a number over 256 with its digits), and a character outside the vocabulary with the
bytes of its UTF-8 form. So every text encodes, and decoding gives it back exactly.

Numbers `digits` (instead of `words`): no number tokens; every number is spelled with its digits, one token each, in
the prompt's sequence and in the program alike (a from-scratch model learns to copy digits far sooner than 257
number tokens: docs/dsl.md).

Chats (`CHAT_TEMPLATE`): `<s>`, then each turn as its role token and its text, an assistant turn closed by `</s>`;
the generation prompt is `<|assistant|>`. A user turn holding the SeqCoder prompt (`dsl.seqcoder.PROMPT`) is shown
as the sequence alone (the text after its last `Sequence: `): a model made here reads no English, and the same
template serves training and evaluation. TRL's SFTTrainer trains prompt/completion chats on the completion alone
(the prompt's rendering is a prefix of the whole chat's); the assistant text and `</s>` sit inside
`{% generation %}` markers for `assistant_only_loss` on `messages` datasets.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

from dsl.functions import FUNCTION_NAMES
from dsl.seqcoder import PROMPT

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

MAX_NUMBER = 256
MAX_SEQUENCE_NAMES = 128  # the sampler's programs: at most 54 lines in 200,000 samples
PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
ROLES = ("system", "user", "assistant")
SEPARATORS = (", ", " = ")
PIECES = r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+| = |, |[\s\S]"
"""How text is cut before lookup: names, digit runs, the two separators, any other single character."""
DIGIT_PIECES = PIECES.replace("[0-9]+", "[0-9]")
"""The same with numbers `digits`: each digit a piece of its own."""
NUMBER_STYLES = ("words", "digits")
"""How numbers are tokenized: one token per number 0..256 (`words`), or one token per digit (`digits`)."""


def check_numbers(numbers: str) -> str:
    if numbers not in NUMBER_STYLES:
        raise ValueError(f"numbers must be one of {', '.join(NUMBER_STYLES)}, got {numbers!r}")
    return numbers


def sequence_marker(prompt: str = PROMPT) -> str:
    """The text before the sequence on the prompt's last line (`Sequence: `); the prompt must end with the
    sequence."""
    head, placeholder, tail = prompt.rpartition("{sequence}")
    if not placeholder or tail:
        raise ValueError("the SeqCoder prompt must end with its {sequence}")
    marker = head.rsplit("\n", 1)[-1]
    if not marker.strip():
        raise ValueError("the SeqCoder prompt must put a label before its {sequence}")
    return marker


def _template(marker: str) -> str:
    literal = json.dumps(marker)
    return (
        "{{- bos_token -}}"
        "{%- for message in messages -%}"
        "{%- if message['role'] not in ['system', 'user', 'assistant'] -%}"
        "{{- raise_exception('SeqCoder chats have system, user and assistant turns only') -}}"
        "{%- endif -%}"
        "{{- '<|' + message['role'] + '|>' -}}"
        "{%- if message['role'] == 'assistant' -%}"
        "{% generation %}{{- message['content'] + eos_token -}}{% endgeneration %}"
        f"{{%- elif message['role'] == 'user' and {literal} in message['content'] -%}}"
        f"{{{{- message['content'].split({literal})[-1] -}}}}"
        "{%- else -%}"
        "{{- message['content'] -}}"
        "{%- endif -%}"
        "{%- endfor -%}"
        "{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}"
    )


CHAT_TEMPLATE = _template(sequence_marker())


def role_token(role: str) -> str:
    return f"<|{role}|>"


def special_tokens() -> list[str]:
    return [PAD, BOS, EOS, UNK, *(role_token(role) for role in ROLES)]


def vocabulary(numbers: str = "words") -> list[str]:
    """Every token in id order: special, bytes, characters, numbers (`words` only), names, separators."""
    tokens = [*special_tokens(), *(f"<0x{b:02X}>" for b in range(256))]
    tokens += [chr(c) for c in range(32, 127)] + ["\n"]
    if check_numbers(numbers) == "words":
        tokens += [str(n) for n in range(10, MAX_NUMBER + 1)]  # 0..9 are characters already
    tokens += [*FUNCTION_NAMES, "output", *(f"sequence_{k}" for k in range(1, MAX_SEQUENCE_NAMES + 1))]
    tokens += SEPARATORS
    if len(set(tokens)) != len(tokens):
        raise ValueError("the SeqCoder vocabulary lists a token twice")
    return tokens


def build_tokenizer(numbers: str = "words") -> Tokenizer:
    """The `tokenizers` pipeline: whole-piece lookup, characters, then UTF-8 bytes; decoding concatenates."""
    vocab = {token: index for index, token in enumerate(vocabulary(numbers))}
    model = models.BPE(vocab=vocab, merges=[], unk_token=UNK, byte_fallback=True, ignore_merges=True)
    tokenizer = Tokenizer(model)
    pieces = PIECES if numbers == "words" else DIGIT_PIECES
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(pieces), behavior="isolated")
    tokenizer.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse()])
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in special_tokens()])
    return tokenizer


def seqcoder_tokenizer(numbers: str = "words") -> PreTrainedTokenizerFast:
    """The transformers tokenizer (bos, eos, pad, unk and the chat template set; nothing added on encoding), which
    `save_pretrained` writes so that `AutoTokenizer.from_pretrained` loads it."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=build_tokenizer(numbers),
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
        model_max_length=4096,
    )


__all__ = [
    "CHAT_TEMPLATE",
    "DIGIT_PIECES",
    "MAX_NUMBER",
    "MAX_SEQUENCE_NAMES",
    "NUMBER_STYLES",
    "PIECES",
    "build_tokenizer",
    "check_numbers",
    "seqcoder_tokenizer",
    "sequence_marker",
    "vocabulary",
]
