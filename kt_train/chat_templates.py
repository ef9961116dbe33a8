"""The chat template a model is trained with, and the one a trained adapter is evaluated with.

Some chat templates put a default system prompt in every conversation that has none: SmolLM2's adds "You are a
helpful AI assistant named SmolLM, trained by Hugging Face". Training keeps it out unless a `system_prompt` is
configured (`training_chat_template`): a ChatML template that adds a default is replaced by plain ChatML, after
checking that both render every conversation that opens with a system message the same way; a configured system
prompt becomes the template's own default, so every chat without a system message gets it, in training and at
inference alike. The trained tokenizer is saved with the adapter, and the backends format an adapter's prompts with
the adapter's template (`adapter_chat_template`), so evaluation sees what training saw.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' "
    "+ '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""ChatML with no default system prompt: SmolLM2's and Qwen2.5's format of plain conversations, nothing added."""

_USER, _ASSISTANT = {"role": "user", "content": "Say ok."}, {"role": "assistant", "content": "ok"}
_TURNS: tuple[list[dict[str, str]], ...] = ([_USER], [_USER, _ASSISTANT], [_USER, _ASSISTANT, _USER, _ASSISTANT])


def _render(tokenizer: Any, template: str, messages: list[dict[str, str]], generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(
        messages, chat_template=template, tokenize=False, add_generation_prompt=generation_prompt
    )


def _cases(chats: list[list[dict[str, str]]]) -> list[tuple[list[dict[str, str]], bool]]:
    """Each chat rendered whole, and with the generation prompt when a user turn ends it."""
    return [(chat, prompt) for chat in chats for prompt in ((False, True) if chat[-1]["role"] == "user" else (False,))]


def _same_rendering(tokenizer: Any, first: str, second: str, chats: list[list[dict[str, str]]]) -> bool:
    return all(
        _render(tokenizer, first, chat, prompt) == _render(tokenizer, second, chat, prompt)
        for chat, prompt in _cases(chats)
    )


def _adds_default_system(tokenizer: Any, template: str) -> bool:
    """Whether `template` renders a chat without a system message longer than with an empty one (a default system
    prompt; SeqCoder's template, for one, adds none)."""
    empty = {"role": "system", "content": ""}
    return any(
        len(_render(tokenizer, template, chat, prompt)) > len(_render(tokenizer, template, [empty, *chat], prompt))
        for chat, prompt in _cases(list(_TURNS))
    )


def with_default_system(template: str, system_prompt: str) -> str:
    """`template` with `system_prompt` as the system message of every conversation that has none."""
    # A Jinja string literal: JSON's escapes, the rest as the Python escapes Jinja's lexer decodes.
    literal = json.dumps(system_prompt, ensure_ascii=False)
    prelude = (
        "{%- if messages and messages[0]['role'] != 'system' %}"
        f"{{%- set messages = [{{'role': 'system', 'content': {literal}}}] + messages %}}"
        "{%- endif %}"
    )
    return prelude + template


def training_chat_template(tokenizer: Any, system_prompt: str | None) -> str | None:
    """The chat template to train `tokenizer`'s model with: `system_prompt` as the system message of every chat that
    has none; None: no system message added (a ChatML template's default one left out). A template that is not
    ChatML is kept as it is (a warning says so when it adds a default system prompt and none is configured)."""
    template = tokenizer.chat_template
    if not isinstance(template, str):
        return template
    other = [[{"role": "system", "content": "Be brief."}, *chat] for chat in _TURNS]
    if system_prompt is not None:
        trained = with_default_system(template, system_prompt)
        system = {"role": "system", "content": system_prompt}
        added = all(
            _render(tokenizer, trained, chat, prompt) == _render(tokenizer, template, [system, *chat], prompt)
            for chat, prompt in _cases(list(_TURNS))
        )
        shown = system_prompt in _render(tokenizer, trained, [_USER], True)
        if not (added and shown) or not _same_rendering(tokenizer, trained, template, other):
            raise ValueError("system_prompt: the chat template does not show a first system message as one")
        return trained
    if not _same_rendering(tokenizer, template, CHATML_TEMPLATE, other):
        if _adds_default_system(tokenizer, template):
            logger.warning(
                "the chat template is not ChatML: kept as it is, with the default system prompt it adds to chats "
                "without one (set system_prompt, or chat_template_path, to choose)"
            )
        return template
    if _same_rendering(tokenizer, template, CHATML_TEMPLATE, list(_TURNS)):
        return template  # it adds nothing to chats without a system message
    logger.info("the chat template's default system prompt is left out (plain ChatML; system_prompt sets one)")
    return CHATML_TEMPLATE


def adapter_chat_template(adapter: str | Path | None) -> str | None:
    """The chat template saved with a trained adapter (the one it was trained with), or None (no adapter, or one
    saved without a tokenizer)."""
    if adapter is None:
        return None
    folder = Path(adapter)
    if (folder / "chat_template.jinja").is_file():
        return (folder / "chat_template.jinja").read_text(encoding="utf-8")
    config = folder / "tokenizer_config.json"
    if config.is_file():
        template = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
        return template if isinstance(template, str) else None
    return None


__all__ = ["CHATML_TEMPLATE", "adapter_chat_template", "training_chat_template", "with_default_system"]
