"""LMiC baseline (KT paper §4 "Baselines", §B.2 Tab. 6; Deletang et al. 2024, "Language Modeling is Compression").

A sequence of ints is written as decimal text (``"12 250 3"``), tokenized by the model's tokenizer, and every token
is coded with a range coder (constriction) under the causal LM's next-token distribution given the tokens before it.
An end-of-sequence token (the tokenizer's EOS) is coded last, so the decoder knows where to stop.

Design:

- Numbers are separated by one space, as in the SeqCoder prompt (``dsl/seqcoder.py``). On SmolLM2-135M a space is
  one token like a comma, and in a teacher-forced pilot (40 KT eval-set sequences, 8 random byte and 8 random
  DNA-like ones of 64 numbers) it coded 2-4% smaller than ``","`` and ``", "`` (which also costs 28% more steps).
  A chat-role prefix (``"user\\n"``) gained 1-2% more on SmolLM2-Instruct; it is a config field, off by default.
- Only tokens that can continue valid number text are coded: at each step the allowed set is the vocabulary tokens
  whose text keeps the text a valid prefix of ``separator.join(str(v) for v in seq)`` with values in ``0..max_value``
  (no leading zeros, nothing above ``max_value``), plus EOS once the last number is complete. The LM's
  probabilities are renormalized over that set: nothing is spent on text that cannot occur and the decoder can never
  emit invalid text. A step with one allowed token is not coded (0 bits) but still fed to the model.
- Encoder and decoder run one shared loop (``LMiCCoder._code``): one model step per token with the KV cache, logits
  of the allowed tokens only, a float64 softmax and constriction's deterministic quantization (``perfect=False``).
  Both directions therefore compute bit-identical probabilities. A teacher-forced forward differs from the
  incremental one in the last float bits (7e-5 on SmolLM2 logits), so it must never be mixed in. So does the number
  of torch threads (measured: 1 and 2 threads give other codes), so coding pins it to ``num_threads`` (default 1:
  one-token steps are memory-bound, 2 threads were no faster, and far slower when another process shares the
  cores). Decoding needs the same model, config, torch build and CPU kernels as encoding.
- The LM reads a window of at most ``max_window_tokens`` tokens (context included). When it is full, the model
  restarts from the context alone (as LMiC's independent chunks) and coding goes on where it was, mid-number if
  need be (the grammar state is kept). The default, 2048, holds every KT evaluation sequence (<= 128 numbers, about
  3.6 tokens each) in one window.
- ``num_bits`` is what is stored: 32 bits per word of the range coder's output (constriction gives no finer exact
  count); ``model_bits`` is the ideal code length ``-sum(log2 p)`` under the model, for reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from tqdm.auto import tqdm

from kt_train.models import DEFAULT_MODEL

__all__ = ["LMiCCode", "LMiCCoder", "LMiCConfig", "lmic_bits", "lmic_compression_rate"]

_DIGITS = "0123456789"


@dataclass
class LMiCConfig:
    """Settings of the LMiC coder; encoder and decoder must use the same ones."""

    model: str = field(default=DEFAULT_MODEL, metadata={"help": "Embedded model name, local path or hub id."})
    separator: str = field(default=" ", metadata={"help": "Text between two numbers (no digits)."})
    prefix: str = field(
        default="",
        metadata={"help": "Text the model reads after BOS, before the numbers (not coded; special tokens allowed)."},
    )
    dtype: Literal["float32", "bfloat16"] = field(
        default="float32", metadata={"help": "Model weights dtype.", "choices": ["float32", "bfloat16"]}
    )
    max_window_tokens: int = field(
        default=2048,
        metadata={"help": "Tokens per model window, context included; a full window restarts from the context."},
    )
    max_value: int = field(
        default=255, metadata={"help": "Largest value of a sequence (255 for bytes, 7 for DNA); a grammar limit."}
    )
    device: str = field(default="cpu", metadata={"help": "Torch device of the model."})
    num_threads: int = field(
        default=1, metadata={"help": "Torch CPU threads while coding (the floats, hence the code, depend on it)."}
    )

    def __post_init__(self) -> None:
        if not self.separator or any(c in _DIGITS for c in self.separator):
            raise ValueError(f"separator must be non-empty text without digits; got {self.separator!r}")
        if self.dtype not in ("float32", "bfloat16"):
            raise ValueError(f"dtype must be 'float32' or 'bfloat16'; got {self.dtype!r}")
        if not 0 < self.max_value <= 255:
            raise ValueError(f"max_value must be in 1..255; got {self.max_value}")
        if self.num_threads < 1:
            raise ValueError(f"num_threads must be at least 1; got {self.num_threads}")
        if self.max_window_tokens < 8:
            raise ValueError(f"max_window_tokens must be at least 8; got {self.max_window_tokens}")


@dataclass(frozen=True, eq=False)
class LMiCCode:
    """A coded sequence: `words` is the whole compressed stream; the other fields are for reporting."""

    words: np.ndarray  # uint32, constriction's range coder output
    num_bits: int  # 32 * len(words): the stored size
    model_bits: float  # -sum(log2 p) of the coded tokens under the model (ideal arithmetic-code length)
    num_tokens: int  # tokens decided, EOS included (forced ones too)
    length: int  # numbers in the sequence


def lmic_compression_rate(code: LMiCCode, symbol_bits: int = 8) -> float:
    """Stored bits over the raw size of the sequence (`symbol_bits` per number: 8 for bytes, 3 for DNA)."""
    return code.num_bits / (symbol_bits * code.length)


class LMiCCoder:
    """Range coding of int sequences under a causal LM; loads the model and tokenizer once."""

    def __init__(self, config: LMiCConfig | None = None) -> None:
        import torch

        from kt_train.models import get_model, get_tokenizer

        self.config = config = config or LMiCConfig()
        self.tokenizer = tokenizer = get_tokenizer(config.model)
        self.model = get_model(config.model, dtype=config.dtype, device=config.device).eval()
        if tokenizer.eos_token_id is None:
            raise ValueError(f"{config.model}: the tokenizer has no EOS token to end a sequence with")
        self.eos_id: int = tokenizer.eos_token_id
        start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else self.eos_id
        self.context: list[int] = [start, *tokenizer(config.prefix, add_special_tokens=False)["input_ids"]]
        limit = getattr(self.model.config, "max_position_embeddings", None)
        if limit is not None and config.max_window_tokens > limit:
            raise ValueError(f"max_window_tokens {config.max_window_tokens} exceeds the model's context of {limit}")
        if config.max_window_tokens <= len(self.context) + 1:
            raise ValueError(f"max_window_tokens must exceed the {len(self.context)} context tokens plus one")
        self._build_alphabet()
        self._allowed_cache: dict[str, list[int]] = {}
        with torch.inference_mode():
            self._restricted_head = self._check_restricted_head()

    # ----- the alphabet and the number grammar

    def _build_alphabet(self) -> None:
        """Vocabulary tokens whose text is made of digits and separator characters; EOS last."""
        tokenizer = self.tokenizer
        chars = set(_DIGITS + self.config.separator)
        special = set(tokenizer.all_special_ids)
        texts = tokenizer.batch_decode(
            [[i] for i in range(len(tokenizer))], skip_special_tokens=False, clean_up_tokenization_spaces=False
        )
        ids = [i for i, t in enumerate(texts) if t and i not in special and set(t) <= chars]
        self.alphabet_ids: list[int] = [*ids, self.eos_id]
        self.alphabet_texts: list[str] = [texts[i] for i in ids]
        self._index = {token: k for k, token in enumerate(self.alphabet_ids)}
        self._eos_index = len(ids)

    def _valid_number(self, text: str) -> bool:
        return (
            text.isdigit()
            and text.isascii()
            and (text == "0" or text[0] != "0")
            and int(text) <= self.config.max_value
        )

    def _valid_prefix(self, text: str) -> bool:
        """Whether `text` starts some rendered sequence (every prefix of a valid number is itself one)."""
        sep = self.config.separator
        *done, last = text.split(sep)
        if not all(self._valid_number(p) for p in done):
            return False
        if last == "" or self._valid_number(last):
            return True
        return any(last.endswith(sep[:k]) and self._valid_number(last[:-k]) for k in range(1, len(sep)))

    def _allowed(self, tail: str) -> list[int]:
        """Alphabet indices allowed after `tail` (the text since the last full separator)."""
        if tail not in self._allowed_cache:
            allowed = [k for k, t in enumerate(self.alphabet_texts) if self._valid_prefix(tail + t)]
            if self._valid_number(tail):
                allowed.append(self._eos_index)
            self._allowed_cache[tail] = allowed
        return self._allowed_cache[tail]

    def _advance(self, tail: str, text: str) -> str:
        joined = tail + text
        cut = joined.rfind(self.config.separator)
        return joined if cut < 0 else joined[cut + len(self.config.separator) :]

    # ----- the model

    def _check_restricted_head(self) -> bool:
        """Whether body + the alphabet's rows of the LM head give the model's own logits (20% faster on CPU).

        Models with logit soft-capping or scaling fail this check and use the full forward.
        """
        import torch

        head = self.model.get_output_embeddings()
        if head is None or not isinstance(head, torch.nn.Linear):
            return False
        ids = torch.tensor(self.alphabet_ids, device=head.weight.device)
        self._head_weight = head.weight[ids]
        self._head_bias = None if head.bias is None else head.bias[ids]
        inputs = torch.tensor([self.context], device=self.config.device)
        full = self.model(input_ids=inputs).logits[0, -1, ids].float()
        hidden = self.model.base_model(input_ids=inputs).last_hidden_state[0, -1]
        restricted = torch.nn.functional.linear(hidden, self._head_weight, self._head_bias).float()
        return bool(torch.allclose(full, restricted, rtol=1e-3, atol=1e-3))

    def _forward(self, token_ids: list[int], cache: Any) -> np.ndarray:
        """Alphabet logits after feeding `token_ids` to the model with `cache` (float32)."""
        import torch

        inputs = torch.tensor([token_ids], device=self.config.device)
        if self._restricted_head:
            hidden = self.model.base_model(input_ids=inputs, past_key_values=cache, use_cache=True).last_hidden_state[
                0, -1
            ]
            logits = torch.nn.functional.linear(hidden, self._head_weight, self._head_bias)
        else:
            logits = self.model(input_ids=inputs, past_key_values=cache, use_cache=True).logits[
                0, -1, self.alphabet_ids
            ]
        return logits.float().cpu().numpy()

    def _new_window(self) -> tuple[Any, np.ndarray]:
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        return cache, self._forward(self.context, cache)

    # ----- the shared coding loop

    def _code(
        self, choose: Callable[[int, np.ndarray, list[int]], int], max_tokens: int, progress: bool
    ) -> tuple[list[int], float]:
        """Decide tokens until EOS; the token ids (EOS last) and their model bits.

        `choose(step, probabilities, allowed)` returns the position in `allowed` taken at token `step`; it is not
        called where only one token is allowed. Encoder and decoder both run this loop, so the model sees the same
        calls in the same order.
        """
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(self.config.num_threads)
        try:
            return self._code_loop(choose, max_tokens, progress)
        finally:
            torch.set_num_threads(threads)

    def _code_loop(
        self, choose: Callable[[int, np.ndarray, list[int]], int], max_tokens: int, progress: bool
    ) -> tuple[list[int], float]:
        import torch

        tokens: list[int] = []
        model_bits = 0.0
        tail = ""
        with torch.inference_mode(), tqdm(total=max_tokens, disable=not progress, desc="LMiC", leave=False) as bar:
            cache, logits = self._new_window()
            window = len(self.context)
            while True:
                if len(tokens) >= max_tokens:
                    raise ValueError(f"no end of sequence within {max_tokens} tokens: the code is corrupt")
                allowed = self._allowed(tail)
                position = 0
                if len(allowed) > 1:
                    scores = logits[allowed].astype(np.float64)
                    probabilities = np.exp(scores - scores.max())
                    probabilities /= probabilities.sum()
                    position = choose(len(tokens), probabilities, allowed)
                    model_bits -= math.log2(probabilities[position])
                index = allowed[position]
                tokens.append(self.alphabet_ids[index])
                bar.update()
                if index == self._eos_index:
                    return tokens, model_bits
                tail = self._advance(tail, self.alphabet_texts[index])
                if window >= self.config.max_window_tokens:
                    cache, _ = self._new_window()
                    window = len(self.context)
                logits = self._forward([tokens[-1]], cache)
                window += 1

    # ----- public API

    def check_sequence(self, sequence: Sequence[int]) -> list[int]:
        """The sequence as a list of ints, or ValueError naming the first bad value."""
        if len(sequence) == 0:
            raise ValueError("LMiC needs a non-empty sequence")
        values = []
        for i, value in enumerate(sequence):
            if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
                raise ValueError(f"LMiC sequences hold ints in 0..{self.config.max_value}; item {i} is {value!r}")
            if not 0 <= value <= self.config.max_value:
                raise ValueError(f"LMiC sequences hold ints in 0..{self.config.max_value}; item {i} is {value}")
            values.append(int(value))
        return values

    def tokenize(self, sequence: Sequence[int]) -> list[int]:
        """Canonical token ids of the sequence's text (no special tokens); all of them are in the alphabet."""
        text = self.config.separator.join(str(v) for v in self.check_sequence(sequence))
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if any(i not in self._index for i in ids) or self._text(ids) != text:
            raise ValueError(f"{self.config.model}: the tokenizer splits {text[:40]!r} into tokens LMiC cannot code")
        return ids

    def _text(self, ids: list[int]) -> str:
        return "".join(self.alphabet_texts[self._index[i]] for i in ids)

    def encode(self, sequence: Sequence[int], progress: bool = False) -> LMiCCode:
        """Compress `sequence` (ints in 0..max_value)."""
        import constriction

        targets = [*self.tokenize(sequence), self.eos_id]
        encoder = constriction.stream.queue.RangeEncoder()

        def choose(step: int, probabilities: np.ndarray, allowed: list[int]) -> int:
            position = allowed.index(self._index[targets[step]])
            encoder.encode(position, constriction.stream.model.Categorical(probabilities, perfect=False))
            return position

        tokens, model_bits = self._code(choose, max_tokens=len(targets), progress=progress)
        if tokens != targets:  # a forced token always is the target for valid text; this guards the grammar
            raise RuntimeError("LMiC grammar rejected the canonical tokenization")
        words = encoder.get_compressed()
        return LMiCCode(words, 32 * len(words), model_bits, len(tokens), len(sequence))

    def decode(self, code: LMiCCode, progress: bool = False) -> list[int]:
        """The sequence `code` was made from; ValueError when no EOS comes within `code.num_tokens` tokens."""
        import constriction

        decoder = constriction.stream.queue.RangeDecoder(np.asarray(code.words, dtype=np.uint32))

        def choose(step: int, probabilities: np.ndarray, allowed: list[int]) -> int:
            return int(decoder.decode(constriction.stream.model.Categorical(probabilities, perfect=False)))

        tokens, _ = self._code(choose, max_tokens=code.num_tokens, progress=progress)
        return [int(v) for v in self._text(tokens[:-1]).split(self.config.separator)]


def lmic_bits(
    sequences: Sequence[Sequence[int]], config: LMiCConfig | None = None, progress: bool = True
) -> list[int]:
    """Stored bits of each sequence under LMiC (one model load for all)."""
    coder = LMiCCoder(config)
    return [coder.encode(s).num_bits for s in tqdm(sequences, desc="LMiC", unit="seq", disable=not progress)]
