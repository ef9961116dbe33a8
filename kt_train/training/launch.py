"""A recipe's entry point: parse `(script args, SFTConfig or GRPOConfig, ModelConfig)` with TrlParser; one line on bad
input."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from trl import ModelConfig, TrlParser

from kt_train.configs import SFTConfig
from kt_train.logs import configure_logging, report_error, take_debug_flag
from kt_train.models import ModelUnavailableError
from kt_train.training.data import DatasetUnavailableError

USER_ERRORS = (ValueError, FileNotFoundError, DatasetUnavailableError, ModelUnavailableError)


def recipe_parser(script_arguments: type, training_config: type = SFTConfig) -> TrlParser:
    """The parser of a recipe; unknown YAML keys fail (TrlParser's default)."""
    return TrlParser((script_arguments, training_config, ModelConfig))


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
        parsed = recipe_parser(script_arguments, training_config).parse_args_and_config(argv)
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
