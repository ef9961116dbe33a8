"""Training chats without the model's default system prompt unless one is configured; the adapter's template at
evaluation (the embedded SmolLM2 tokenizer, whose template adds "You are a helpful AI assistant named SmolLM")."""

from __future__ import annotations

from pathlib import Path

import pytest
from trl import ModelConfig

from dsl.seqcoder import seqcoder_prompt, to_seqcoder_chat
from kt_train.chat_templates import CHATML_TEMPLATE, adapter_chat_template, training_chat_template
from kt_train.configs import SFTConfig
from kt_train.generation import chat_messages, get_backend
from kt_train.models import DEFAULT_MODEL, get_tokenizer
from kt_train.training.model import get_training_tokenizer

SMOLLM_DEFAULT = "You are a helpful AI assistant named SmolLM"
ROW = {"sequence": [1, 2, 3], "program": "a = range_func_up(1, 3)\noutput = a"}


def render(tokenizer: object, messages: list[dict[str, str]], generation_prompt: bool = False) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)


def args(tmp_path: Path, **overrides: object) -> SFTConfig:
    return SFTConfig(output_dir=str(tmp_path), report_to=[], use_cpu=True, **overrides)


def test_the_embedded_template_adds_its_default_system_prompt() -> None:
    """The control: what the issue saw in every KT and NL training row."""
    chat = to_seqcoder_chat(ROW)
    assert SMOLLM_DEFAULT in render(get_tokenizer(DEFAULT_MODEL), chat["prompt"] + chat["completion"])


def test_training_chats_have_no_system_prompt_by_default(tmp_path: Path) -> None:
    tokenizer = get_training_tokenizer(ModelConfig(), args(tmp_path))
    chat = to_seqcoder_chat(ROW)
    text = render(tokenizer, chat["prompt"] + chat["completion"])
    assert text == f"<|im_start|>user\n{seqcoder_prompt(ROW['sequence'])}<|im_end|>\n<|im_start|>assistant\n" + (
        f"{ROW['program']}<|im_end|>\n"
    )
    assert tokenizer.chat_template == CHATML_TEMPLATE
    # a chat that brings its own system message renders as the model's own template renders it
    base = get_tokenizer(DEFAULT_MODEL)
    with_system = [{"role": "system", "content": "S"}, *chat["prompt"]]
    assert render(tokenizer, with_system, True) == render(base, with_system, True)


def test_a_configured_system_prompt_is_in_every_chat(tmp_path: Path) -> None:
    system = 'Answer with a "program"\nonly: é, 🙂, {{ x }} {% raw %}\\n'
    tokenizer = get_training_tokenizer(ModelConfig(), args(tmp_path, system_prompt=system))
    base = get_tokenizer(DEFAULT_MODEL)
    chat = to_seqcoder_chat(ROW)
    explicit = [{"role": "system", "content": system}, *chat["prompt"]]
    assert render(tokenizer, chat["prompt"], True) == render(base, explicit, True)
    assert render(tokenizer, chat["prompt"] + chat["completion"]) == render(base, explicit + chat["completion"])
    assert SMOLLM_DEFAULT not in render(tokenizer, chat["prompt"])
    other = [{"role": "system", "content": "other"}, *chat["prompt"]]
    assert render(tokenizer, other, True) == render(base, other, True)  # an explicit one wins


def test_a_template_that_is_not_chatml_is_kept(tmp_path: Path) -> None:
    tokenizer = get_tokenizer(DEFAULT_MODEL)
    tokenizer.chat_template = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
    assert training_chat_template(tokenizer, None) == tokenizer.chat_template
    assert training_chat_template(get_tokenizer(DEFAULT_MODEL), None) == CHATML_TEMPLATE
    no_system = "{% for m in messages %}{% if m['role'] != 'system' %}{{ m['content'] }}{% endif %}{% endfor %}"
    tokenizer.chat_template = no_system
    with pytest.raises(ValueError, match="system_prompt"):
        training_chat_template(tokenizer, "Use the DSL.")


def test_a_template_that_is_not_chatml_warns_only_when_it_adds_a_system_prompt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from dsl.seqcoder_tokenizer import seqcoder_tokenizer

    tokenizer = seqcoder_tokenizer()  # SeqCoder's template: a chat without a system message gets none
    with caplog.at_level("WARNING", logger="kt_train.chat_templates"):
        assert training_chat_template(tokenizer, None) == tokenizer.chat_template
    assert not caplog.records
    turns = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
    tokenizer.chat_template = "{% if messages[0]['role'] != 'system' %}[system] Be kind.\n{% endif %}" + turns
    with caplog.at_level("WARNING", logger="kt_train.chat_templates"):
        assert training_chat_template(tokenizer, None) == tokenizer.chat_template
    assert "default system prompt" in caplog.text


def test_an_adapter_is_evaluated_in_its_training_format(tmp_path: Path) -> None:
    """The transformers backend formats an adapter's prompts with the template saved with it: the SeqCoder prompt
    is the training row's prompt, token for token (was: the base template, default system prompt included)."""
    from tests.kt_train.vllm_fixtures import save_random_adapter

    adapter = save_random_adapter(tmp_path / "adapter")
    trained = get_training_tokenizer(ModelConfig(), args(tmp_path / "run"))
    trained.save_pretrained(adapter)  # what a training run saves beside its adapter
    assert adapter_chat_template(adapter) == CHATML_TEMPLATE
    backend = get_backend("transformers", DEFAULT_MODEL, adapter=str(adapter), dtype="float32")
    prompt = seqcoder_prompt(ROW["sequence"])
    assert backend._format(prompt) == render(trained, to_seqcoder_chat(ROW)["prompt"], True)
    base = get_backend("transformers", DEFAULT_MODEL, dtype="float32")
    assert SMOLLM_DEFAULT in base._format(prompt)  # the base model keeps its own format
    assert adapter_chat_template(None) is None and adapter_chat_template(tmp_path) is None
    assert chat_messages(prompt) == to_seqcoder_chat(ROW)["prompt"]
