"""Session fixtures of the vLLM and OpenAI-backend tests (one adapter and one set of reference texts for both)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kt_train.vllm_fixtures import ReferenceTexts, save_random_adapter


@pytest.fixture(scope="session")
def lora_adapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_random_adapter(tmp_path_factory.mktemp("adapter"))


@pytest.fixture(scope="session")
def reference(lora_adapter: Path) -> ReferenceTexts:
    return ReferenceTexts(lora_adapter)
