"""`kt export merge`: a LoRA adapter merged into its base model, saved as a plain transformers model folder (weights,
config, tokenizer, generation config, model card) that any tool loads without PEFT."""

from __future__ import annotations

import argparse
import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kt_train.options import add_options, options_from

logger = logging.getLogger(__name__)
GENERATION_CONFIG = "generation_config.json"


@dataclass
class MergeConfig:
    """The options of `kt export merge`."""

    adapter: str = field(metadata={"help": "a saved LoRA adapter (a training run's output folder)", "metavar": "DIR"})
    output: str = field(metadata={"help": "the folder for the merged model (must not exist)", "metavar": "DIR"})
    model: str | None = field(
        default=None,
        metadata={
            "help": "the base model (embedded name, path or hub id); default: the one the adapter names. An adapter "
            "trained on the embedded model names its hub id: pass the embedded name to merge offline"
        },
    )
    dtype: Literal["float32", "bfloat16"] = field(default="float32", metadata={"help": "dtype of the merged weights"})

    def __post_init__(self) -> None:
        from kt_train.models import EMBEDDED_MODELS, ModelUnavailableError, check_model_name

        config = Path(self.adapter) / "adapter_config.json"
        if not config.is_file():
            raise FileNotFoundError(f"no adapter_config.json in {self.adapter} (not a saved LoRA adapter)")
        if Path(self.output).exists():
            raise FileExistsError(f"{self.output} exists: choose a new folder for the merged model")
        if self.model is None:
            self.model = json.loads(config.read_text(encoding="utf-8"))["base_model_name_or_path"]
        try:
            check_model_name(self.model)
        except ModelUnavailableError as exc:
            embedded = [name for name, spec in EMBEDDED_MODELS.items() if spec.hub_id == self.model]
            if not embedded:
                raise
            raise ModelUnavailableError(f"{exc}; its embedded copy: --model {embedded[0]}") from exc


def merge_adapter(config: MergeConfig) -> Path:
    """Merge `config.adapter` into its base and save it with the adapter's tokenizer, generation config and card."""
    from peft import PeftModel

    from kt_train.models import get_model, get_tokenizer
    from kt_train.training.model_card import record_base_model, write_model_card

    assert config.model is not None  # set by MergeConfig
    adapter = Path(config.adapter)
    base = get_model(config.model, dtype=config.dtype)
    merged = PeftModel.from_pretrained(base, str(adapter)).merge_and_unload()
    output = Path(config.output)
    merged.save_pretrained(output)
    has_tokenizer = (adapter / "tokenizer_config.json").is_file()
    get_tokenizer(str(adapter) if has_tokenizer else config.model).save_pretrained(output)
    if (adapter / GENERATION_CONFIG).is_file():  # the training run's (it ends at the chat's EOS)
        shutil.copyfile(adapter / GENERATION_CONFIG, output / GENERATION_CONFIG)
    metrics_file = adapter / "train_results.json"
    write_model_card(
        output,
        base=record_base_model(output, config.model),
        local_base=config.model,
        adapter=False,
        dataset_name=None,
        tags=[],
        merged_from=str(adapter),
        metrics=json.loads(metrics_file.read_text(encoding="utf-8")) if metrics_file.is_file() else {},
    )
    logger.info("merged %s into %s: %s", adapter, config.model, output)
    return output


def _merge(args: argparse.Namespace) -> int:
    output = merge_adapter(options_from(MergeConfig, args))
    print(output)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `export` command group."""
    group = subparsers.add_parser("export", help="models for other tools: a LoRA adapter merged into its base")
    commands = group.add_subparsers(dest="export_command", metavar="SUBCOMMAND", required=True)
    merge = commands.add_parser(
        "merge", help="Merge a LoRA adapter into its base model and save a plain transformers model folder."
    )
    add_options(merge, MergeConfig, config_file=False)
    merge.set_defaults(handler=_merge)
