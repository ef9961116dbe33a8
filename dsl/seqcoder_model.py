"""A SeqCoder made from scratch (KT paper §4, §B.1: a Llama-architecture model, here far smaller): a seeded
`LlamaForCausalLM` over the DSL tokenizer (`dsl.seqcoder_tokenizer`), saved with it in one folder that
`AutoModelForCausalLM.from_pretrained` and `AutoTokenizer.from_pretrained` load (`kt dsl init-seqcoder`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsl.seqcoder_tokenizer import NUMBER_STYLES, check_numbers

if TYPE_CHECKING:
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast


@dataclass(frozen=True)
class SeqCoderSize:
    """The shape of a named size (the paper's SeqCoder-1.5B: 24 layers, hidden 2,048, 16 heads)."""

    hidden_size: int = field(metadata={"help": "width of the residual stream"})
    num_layers: int = field(metadata={"help": "transformer blocks"})
    num_heads: int = field(metadata={"help": "attention heads (as many key/value heads)"})
    intermediate_size: int = field(metadata={"help": "width of the SwiGLU MLP"})


SIZES: dict[str, SeqCoderSize] = {
    "tiny": SeqCoderSize(hidden_size=128, num_layers=4, num_heads=4, intermediate_size=512),
    "small": SeqCoderSize(hidden_size=256, num_layers=6, num_heads=8, intermediate_size=1024),
    "base": SeqCoderSize(hidden_size=384, num_layers=8, num_heads=6, intermediate_size=1536),
}


@dataclass(frozen=True)
class SeqCoderInit:
    """What `init_seqcoder` makes."""

    size: str = field(default="tiny", metadata={"help": "named size", "choices": list(SIZES)})
    seed: int = field(default=0, metadata={"help": "seed of the weight initialisation"})
    numbers: str = field(
        default="words",
        metadata={"help": "numbers as one token each (words, 0..256) or as digits", "choices": list(NUMBER_STYLES)},
    )
    max_position_embeddings: int = field(
        default=4096, metadata={"help": "longest chat in tokens (RoPE; also the tokenizer's model_max_length)"}
    )

    def __post_init__(self) -> None:
        if self.size not in SIZES:
            raise ValueError(f"size must be one of {', '.join(SIZES)}, got {self.size!r}")
        check_numbers(self.numbers)
        if self.max_position_embeddings < 16:
            raise ValueError(f"max_position_embeddings must be >= 16, got {self.max_position_embeddings}")


def seqcoder_config(init: SeqCoderInit, tokenizer: PreTrainedTokenizerFast) -> LlamaConfig:
    """The Llama config of a size, its vocabulary and special tokens the tokenizer's (input and output embeddings
    tied)."""
    from transformers import LlamaConfig

    size = SIZES[init.size]
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=size.hidden_size,
        intermediate_size=size.intermediate_size,
        num_hidden_layers=size.num_layers,
        num_attention_heads=size.num_heads,
        num_key_value_heads=size.num_heads,
        max_position_embeddings=init.max_position_embeddings,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )


def init_seqcoder(init: SeqCoderInit) -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    """A freshly initialised model (the same weights for the same seed; the global RNG is left as it was) and its
    tokenizer."""
    import torch
    from transformers import LlamaForCausalLM

    from dsl.seqcoder_tokenizer import seqcoder_tokenizer

    tokenizer = seqcoder_tokenizer(init.numbers)
    tokenizer.model_max_length = init.max_position_embeddings
    config = seqcoder_config(init, tokenizer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(init.seed)
        model = LlamaForCausalLM(config)
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def num_parameters(model: Any) -> int:
    """Distinct parameters (tied embeddings counted once)."""
    return sum(p.numel() for p in model.parameters())


def save_seqcoder(output: Path, init: SeqCoderInit) -> dict[str, Any]:
    """Write the model and its tokenizer to `output` (a new or empty folder); a summary."""
    if output.exists() and any(output.iterdir()):
        raise FileExistsError(f"{output} is not empty")
    model, tokenizer = init_seqcoder(init)
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    return {
        "output": str(output),
        "size": init.size,
        "seed": init.seed,
        "numbers": init.numbers,
        "parameters": num_parameters(model),
        "vocab_size": len(tokenizer),
    }


FORMAT_VERSION = 1
"""Of the cached models (`seqcoder_model_dir`): bumped whenever the tokenizer or the initialisation changes, so a
model made by older code is never reused."""


def seqcoder_model_dir(size: str, seed: int, numbers: str = "words") -> Path:
    """The from-scratch model of `size`, `seed` and `numbers` under the kt-train cache (`$KT_TRAIN_CACHE/models`,
    keyed by them and `FORMAT_VERSION`): made once, by the main process of a distributed run first, found by the
    others."""
    from accelerate import PartialState

    from kt_train.models import COMPLETE_MARKER, cache_dir

    init = SeqCoderInit(size=size, seed=seed, numbers=numbers)
    style = "" if numbers == "words" else f"-{numbers}"
    target = cache_dir() / "models" / f"seqcoder-{size}{style}-seed{seed}-v{FORMAT_VERSION}"
    with PartialState().main_process_first():
        if not (target / COMPLETE_MARKER).is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
            save_seqcoder(work, init)
            (work / COMPLETE_MARKER).write_text(f"{init}\n", encoding="utf-8")
            if target.exists() and not (target / COMPLETE_MARKER).is_file():
                shutil.rmtree(target)  # the leftover of an interrupted run
            try:
                os.replace(work, target)
            except OSError:  # another run put it there meanwhile
                shutil.rmtree(work, ignore_errors=True)
    return target


__all__ = [
    "FORMAT_VERSION",
    "SIZES",
    "SeqCoderInit",
    "SeqCoderSize",
    "init_seqcoder",
    "num_parameters",
    "save_seqcoder",
    "seqcoder_model_dir",
]
