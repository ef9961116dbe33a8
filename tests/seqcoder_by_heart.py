"""A tiny SeqCoder trained to write given answers by heart: the real model class and chat template, so decoding tests
(feed & ex, line search) run the real backend on outputs they can predict."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from dsl.seqcoder import to_seqcoder_chat
from dsl.seqcoder_model import SeqCoderInit, init_seqcoder


def train_by_heart(
    answers: Sequence[tuple[Sequence[int], str]], out: Path, steps: int = 300, stop_loss: float | None = None
) -> Path:
    """Train a tiny SeqCoder on the (sequence, answer) chats, all in one batch, for `steps` steps (or until the loss
    is below `stop_loss`); save it with its tokenizer into `out`. An answer given twice is learnt twice as likely."""
    model, tokenizer = init_seqcoder(SeqCoderInit(seed=0, max_position_embeddings=1024))
    texts = []
    for sequence, answer in answers:
        chat = to_seqcoder_chat({"sequence": list(sequence), "program": answer})
        texts.append(tokenizer.apply_chat_template(chat["prompt"] + chat["completion"], tokenize=False))
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    torch.manual_seed(0)
    model.train()
    for _ in range(steps):
        loss = model(**batch, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if stop_loss is not None and loss.item() < stop_loss:
            break
    model.eval()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
