"""Whether the weights a run saved are the weights it trained: no empty tensor (the partitioned-saving failure under
ZeRO-3, TRL #4416), and the same logits as the trained model on a probe text once loaded afresh from disk (the
adapter onto its base).

The reload happens in this process (`check_reloads`); under DeepSpeed ZeRO-3, where no model can be loaded inside the
live ZeRO-3 process, every rank computes the trained model's probe logits (a collective forward) and the main process
loads the saved weights in a child process (`python -m kt_train.training.saved_weights`). A `copy.deepcopy` of the
trained model is no reference: after training, copies of a PEFT SmolLM2 gave logits 0.01-0.11 apart from the trained
model and from each other while the fresh reload matched it exactly.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

RELOAD_PROBE = "sequence_1 = range_func_up(1, 5)\noutput = sequence_1"
RELOAD_TOLERANCE = 1e-5  # float32; in bfloat16, two units in the last place of the largest logit
RELOAD_MAX_PARAMETERS = 2_000_000_000  # the in-process check holds a second model
ADAPTER_FILE = "adapter_model.safetensors"
CHILD_ENV_DROPPED = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


class SavedWeightsError(RuntimeError):
    """The weights a run saved hold no values (the known partitioned-saving failure under ZeRO-3, TRL #4416), or
    do not give the trained model's outputs."""


def check_saved_weights(output_dir: Path) -> None:
    """Raise SavedWeightsError when the saved adapter (or model) has no tensor, or a tensor with no values."""
    from safetensors import safe_open

    for name in (ADAPTER_FILE, "model.safetensors"):
        path = output_dir / name
        if not path.is_file():
            continue
        with safe_open(str(path), framework="pt") as weights:
            shapes = {key: weights.get_slice(key).get_shape() for key in weights.keys()}  # noqa: SIM118
        empty = [key for key, shape in shapes.items() if math.prod(shape) == 0]
        if not shapes or empty:
            raise SavedWeightsError(
                f"{path} is empty ({len(empty)} of {len(shapes)} tensors hold no values, e.g. {empty[:1]}): the "
                "weights were not gathered before saving; the checkpoints hold the trained state"
            )


def dtype_name(model: Any) -> str:
    """`model`'s weights' dtype as `get_model` takes it: float32, bfloat16, ..."""
    return str(model.dtype).removeprefix("torch.")


def probe_inputs(tokenizer: Any) -> dict[str, Any]:
    return dict(tokenizer(RELOAD_PROBE, return_tensors="pt"))


def probe_logits(model: Any, inputs: dict[str, Any]) -> Any:
    """`model`'s logits on the probe inputs, in eval mode (left in the mode it was in), in the weights' own dtype (not
    under the autocast that accelerate's mixed precision wraps `forward` in). Under ZeRO-3 every rank calls it: the
    forward gathers the partitioned weights."""
    import torch

    training = model.training
    forward = getattr(model, "_original_forward", model)
    model.eval()
    try:
        with torch.no_grad():
            return forward(**{k: v.to(model.device) for k, v in inputs.items()}).logits.float().cpu()
    finally:
        model.train(training)


def reload_tolerance(expected: Any, dtype: str) -> float:
    """RELOAD_TOLERANCE in float32; in bfloat16 (8 significant bits), two units in the last place of the largest
    logit."""
    if dtype == "bfloat16":
        return 2 ** (math.floor(math.log2(max(expected.abs().max().item(), 1.0))) - 6)
    return RELOAD_TOLERANCE


def compare_logits(expected: Any, reloaded: Any, output_dir: Path, dtype: str = "float32") -> float:
    """The largest difference of the reloaded logits from the trained ones; SavedWeightsError over
    `reload_tolerance`."""
    same_shape = tuple(expected.shape) == tuple(reloaded.shape)
    difference = (expected - reloaded).abs().max().item() if same_shape else math.inf
    if not difference <= reload_tolerance(expected, dtype):
        raise SavedWeightsError(
            f"{output_dir}: the saved weights do not give the trained model's outputs (largest logit difference "
            f"{difference:.3g}); the checkpoints hold the trained state"
        )
    logger.info("the saved weights give the trained logits (largest difference %.2g)", difference)
    return difference


def reloaded_logits(
    output_dir: Path, base: str | None, dtype: str, inputs: dict[str, Any], device: str = "cpu"
) -> Any:
    """The probe logits of the saved weights loaded afresh on `device`: the whole model from `output_dir`, or `base`
    with the adapter in `output_dir`."""
    from kt_train.models import get_model

    if (output_dir / ADAPTER_FILE).is_file():
        from peft import PeftModel

        if base is None:
            raise SavedWeightsError(f"{output_dir}: an adapter with no base model to reload it onto")
        model = PeftModel.from_pretrained(get_model(base, dtype=dtype, device=device), str(output_dir))  # type: ignore[arg-type]
    else:
        model = get_model(str(output_dir), dtype=dtype, device=device)  # type: ignore[arg-type]
    return probe_logits(model, inputs)


def check_reloads(model: Any, tokenizer: Any, output_dir: Path, base: str | None) -> float:
    """Raise SavedWeightsError unless the saved weights (the adapter onto `base`, or the whole model), loaded afresh
    in this process, give the same logits as `model` on the probe text (not under ZeRO-3: `check_reloads_fresh`)."""
    inputs = probe_inputs(tokenizer)
    expected = probe_logits(model, inputs)
    dtype = dtype_name(model)
    reloaded = reloaded_logits(output_dir, base, dtype, inputs, str(model.device))
    return compare_logits(expected, reloaded, output_dir, dtype)


def check_reloads_fresh(
    expected: Any, inputs: dict[str, Any], output_dir: Path, base: str | None, dtype: str, device: str = "cpu"
) -> float:
    """Raise SavedWeightsError unless the saved weights, loaded on `device` in a child process (no ZeRO-3 there),
    give the `expected` logits on the probe inputs."""
    import torch

    with tempfile.TemporaryDirectory(prefix="kt-reload-") as work:
        probe, result = Path(work) / "probe.pt", Path(work) / "reloaded.pt"
        torch.save(dict(inputs), probe)
        command = [sys.executable, "-m", "kt_train.training.saved_weights", str(output_dir), str(probe), str(result)]
        command += ["--dtype", dtype, "--device", device, *(["--base", base] if base else [])]
        env = {k: v for k, v in os.environ.items() if k not in CHILD_ENV_DROPPED and not k.startswith("ACCELERATE_")}
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0 or not result.is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise SavedWeightsError(f"{output_dir}: the saved weights could not be reloaded ({last})")
        return compare_logits(expected, torch.load(result, weights_only=True), output_dir, dtype)


def main(argv: Sequence[str] | None = None) -> int:
    """The child of `check_reloads_fresh`: write the reloaded weights' probe logits."""
    import torch

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("probe", type=Path, help="the probe inputs (torch.save of a dict of tensors)")
    parser.add_argument("result", type=Path, help="where the logits go")
    parser.add_argument("--base", default=None, help="the base model an adapter is loaded onto")
    parser.add_argument("--dtype", default="float32", choices=["auto", "float32", "bfloat16"])
    parser.add_argument("--device", default="cpu", help="where the model is loaded: cpu, cuda:0, ...")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    inputs = torch.load(args.probe, weights_only=True)
    torch.save(reloaded_logits(args.output_dir, args.base, args.dtype, inputs, args.device), args.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
