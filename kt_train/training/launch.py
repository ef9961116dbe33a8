"""A recipe's entry point: parse `(script args, SFTConfig or GRPOConfig, ModelConfig)` with TrlParser; one line on bad
input."""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import typing
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import yaml
from trl import ModelConfig, TrlParser

from kt_train.configs import SFTConfig
from kt_train.logs import configure_logging, report_error, take_debug_flag
from kt_train.models import ModelUnavailableError, check_model_name
from kt_train.options import fits, simple_types
from kt_train.training.data import DatasetUnavailableError
from kt_train.training.saved_weights import SavedWeightsError

logger = logging.getLogger(__name__)
# reported in one line (exit status 2 for bad input, 1 for the rest: `logs.report_error`)
USER_ERRORS = (ValueError, FileNotFoundError, DatasetUnavailableError, ModelUnavailableError, SavedWeightsError)


class RecipeParser(TrlParser):
    """TrlParser whose errors are one line (argparse prints the whole usage, 155 lines for a recipe, first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def recipe_parser(script_arguments: type, training_config: type = SFTConfig) -> TrlParser:
    """The parser of a recipe; unknown YAML keys fail (TrlParser's default)."""
    return RecipeParser((script_arguments, training_config, ModelConfig))


def check_types(parsed: Sequence[Any]) -> None:
    """Refuse a value of the wrong type for a number, flag or text setting (YAML values skip argparse's types):
    e.g. `learning_rate: [1, 2]` would otherwise fail only once the model is loaded and training starts."""
    for config in parsed:
        try:
            hints = typing.get_type_hints(type(config))
        except Exception:  # an annotation that does not resolve here: nothing to check against
            continue
        for item in dataclasses.fields(config):
            accepted = simple_types(hints.get(item.name))
            value = getattr(config, item.name)
            if accepted is None or fits(value, accepted):
                continue
            wanted = " or ".join(t.__name__ for t in accepted if t is not type(None))
            raise ValueError(f"{item.name} must be {wanted}, not {type(value).__name__} {value!r:.40}")


def check_models(parsed: Sequence[Any]) -> None:
    """The model to train can be there (`kt_train.models.check_model_name`), before any data or model loads."""
    for arguments in parsed:
        name = getattr(arguments, "model_name_or_path", None)
        if isinstance(name, str):
            check_model_name(name)


def apply_torch_threads(parsed: Sequence[Any]) -> None:
    """`torch_threads`, when set: this process's torch threads, and OMP_NUM_THREADS of the processes it starts (the
    post-training evaluations)."""
    for arguments in parsed:
        threads = getattr(arguments, "torch_threads", None)
        if threads is not None:
            import torch

            torch.set_num_threads(threads)
            os.environ["OMP_NUM_THREADS"] = str(threads)
            logger.info("torch threads: %d", threads)


def launch(
    main: Callable[..., Any],
    script_arguments: type,
    argv: list[str] | None = None,
    training_config: type = SFTConfig,
) -> int:
    """Parse the command line (and `--config` YAML) and run `main`, with logging at the training arguments' level for
    this process (rank 0 logs, the others only warn); a broken config or missing data or model gives one `error:` line
    and exit status 2 instead of a traceback (shown with `--debug` or KT_DEBUG=1)."""
    argv, debug = take_debug_flag(sys.argv[1:] if argv is None else argv)
    configure_logging(debug)
    try:
        try:
            parsed = recipe_parser(script_arguments, training_config).parse_args_and_config(argv)
        except yaml.YAMLError as exc:
            raise ValueError(f"the config is not valid YAML: {exc}") from exc
        check_types(parsed)
        check_models(parsed)
        apply_torch_threads(parsed)
        configure_logging(debug, _process_log_level(parsed))
        main(*parsed)
    except USER_ERRORS as exc:
        return report_error(sys.argv[0], exc, debug)
    finally:
        _end_distributed()
    return 0


def _process_log_level(parsed: Sequence[Any]) -> int:
    """The log level TrainingArguments give this process (`log_level` on rank 0, `log_level_replica` elsewhere)."""
    for arguments in parsed:
        if hasattr(arguments, "get_process_log_level"):
            level = arguments.get_process_log_level()
            import transformers

            transformers.utils.logging.set_verbosity(level)
            return level
    return logging.INFO


def _end_distributed() -> None:
    """Destroy the process group (gloo ranks otherwise abort at exit: "terminate called without an active
    exception")."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
