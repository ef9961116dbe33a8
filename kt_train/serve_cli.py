"""`kt serve`: an OpenAI-compatible vLLM server of a model and its adapters (see `kt_train.vllm_server`)."""

from __future__ import annotations

import argparse
import logging
import os
import shlex
from dataclasses import dataclass, field

from kt_train.models import DEFAULT_MODEL
from kt_train.options import add_options, options_from

logger = logging.getLogger(__name__)


@dataclass
class ServeConfig:
    """The options of `kt serve`."""

    model: str = field(default=DEFAULT_MODEL, metadata={"help": "model to serve (embedded name, path or hub id)"})
    served_model_name: str | None = field(
        default=None, metadata={"help": "the name clients ask for (--model of --backend openai; default: --model)"}
    )
    adapters: dict[str, str] = field(
        default_factory=dict, metadata={"help": "LoRA adapters served as models of their own", "metavar": "NAME=DIR"}
    )
    host: str = field(default="127.0.0.1", metadata={"help": "address to listen on"})
    port: int = field(default=8000, metadata={"help": "port to listen on"})
    max_model_len: int | None = field(default=None, metadata={"help": "longest prompt + completion (tokens)"})
    enforce_eager: bool = field(
        default=False, metadata={"help": "no torch.compile: starts in ~1 minute instead of ~4 on 2 CPU cores"}
    )

    def __post_init__(self) -> None:
        from kt_train.models import check_model_name

        check_model_name(self.model)
        if not 0 < self.port < 65536:
            raise ValueError(f"--port must be 1..65535, got {self.port}")


def _serve(args: argparse.Namespace) -> int:
    from kt_train.vllm_backend import import_vllm
    from kt_train.vllm_server import server_command

    config = options_from(ServeConfig, args)
    import_vllm()  # one error line naming the extra when vLLM is missing
    engine = {"max_model_len": config.max_model_len, "enforce_eager": config.enforce_eager}
    command = server_command(
        config.model,
        host=config.host,
        port=config.port,
        served_model_name=config.served_model_name,
        adapters=config.adapters,
        engine_kwargs=engine,
    )
    print(f"serving at http://{config.host}:{config.port}/v1: {shlex.join(command)}", flush=True)
    os.execv(command[0], command)  # the server takes this process (signals reach it directly)
    return 0  # not reached


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `serve` command."""
    parser = subparsers.add_parser("serve", help="an OpenAI-compatible vLLM server of a model (for --backend openai)")
    add_options(parser, ServeConfig, config_file=False)
    parser.set_defaults(handler=_serve)
