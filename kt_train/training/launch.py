"""A recipe's entry point: parse `(script args, SFTConfig or GRPOConfig, ModelConfig)` with TrlParser; one line on bad
input."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from trl import ModelConfig, TrlParser

from kt_train.configs import SFTConfig
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
    """Parse the command line (and `--config` YAML) and run `main`; a broken config or missing data or model gives
    one `error:` line and exit status 2 instead of a traceback."""
    try:
        main(*recipe_parser(script_arguments, training_config).parse_args_and_config(argv))
    except USER_ERRORS as exc:
        print(f"{sys.argv[0]}: error: {exc}", file=sys.stderr)
        return 2
    finally:
        _end_distributed()
    return 0


def _end_distributed() -> None:
    """Destroy the process group (gloo ranks otherwise abort at exit: "terminate called without an active
    exception")."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
