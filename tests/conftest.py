"""Shared test setup: offline hub, a tiny model for tests that need any model, the fast tier training nothing."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A randomly initialised 2-layer, 64-wide model of the embedded model's architecture, with its tokenizer and chat
    template: for tests whose claim does not depend on the model's size (a resume is bit for bit or not), so that
    their work is bounded by a few small matrices, not by a 135M model on a busy CPU."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from kt_train.models import DEFAULT_MODEL, ensure_embedded_model

    source = ensure_embedded_model(DEFAULT_MODEL)
    config = AutoConfig.from_pretrained(source)
    shape = {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128, "head_dim": 16}
    config.update(shape | {"num_attention_heads": 4, "num_key_value_heads": 2})
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-model")
    AutoModelForCausalLM.from_config(config, dtype=torch.float32).save_pretrained(folder)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return str(folder)


@pytest.fixture(autouse=True)
def _fast_tier_trains_nothing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast tier (`make test-fast`: `-m "not slow"`) trains nothing: a test outside the slow tier that builds a
    transformers Trainer (SFT, GRPO or any other) in the test process fails, naming the marker it needs."""
    if request.node.get_closest_marker("slow") is not None:
        return
    from transformers import Trainer

    def refuse(self: Trainer, *args: object, **kwargs: object) -> None:
        raise AssertionError(f"{type(self).__name__} built outside the slow tier: mark the test `slow`")

    monkeypatch.setattr(Trainer, "__init__", refuse)
