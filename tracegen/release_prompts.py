"""The release's own prompts (`kt rtce build --prompt-style release`), rendered at run time by the release's code.

The renderer is `src/data/build_codeio_msg.py` of the checkout of Nickil21/round-trip-code-compression given with
`--release-dir`. It runs as it is, a subprocess of this Python in a scratch folder, once per algorithm on the
benchmark's inputs and outputs; none of its templates or listings is kept in this repository. It executes the
checkout's code: give a checkout you trust. Its listings read, per input, the symbol counts (AE's, with 'EOF': 1;
Huffman's are those less 'EOF') and Huffman's codebook and padding from `data/raw/<alg>/output/NNN_*_freq.json` and
`NNN_*_codebook.json`, files the release does not commit: they are written here from our encoders, which reproduce the
release's outputs. A second run with marker values finds where each prompt shows its given value (`given_span`), so a
follow-up prompt (the round trip's I/P Pred on the model's own z) is the same prompt with another value there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracegen.algorithms.arithmetic import ae_freq
from tracegen.algorithms.huffman import encode as huffman_encode
from tracegen.inputs import InputItem
from tracegen.release import read_release_file, recorded_output
from tracegen.tasks import Algorithm, Task

RELEASE_STYLE = "release"
RENDERER = Path("src") / "data" / "build_codeio_msg.py"
RELEASE_TASKS = {  # the release's `io_pred` -> ours
    "output_execution_prediction": Task.OUTPUT_PRED,
    "output_execution_prediction_with_inversion": Task.OUTPUT_PRED_INV,
    "input_execution_prediction": Task.INPUT_PRED,
    "input_execution_prediction_with_inversion": Task.INPUT_PRED_INV,
}
MARKER = "\u27e6kt-given\u27e7"
"""The marker run's x, and its z's string part: text no prompt holds."""
_MARKER_INT = 987654321012345678
MARKER_OUTPUTS: dict[str, Any] = {
    "lzw": [_MARKER_INT],
    "ae": 9.876543210123457e-300,
    "rle": [[MARKER, _MARKER_INT]],
    "huffman": [_MARKER_INT],
}
"""The marker run's z per algorithm: of the type the renderer checks, text no prompt holds."""
TIMEOUT_S = 600


@dataclass(frozen=True)
class ReleasePrompt:
    """One prompt as the release renders it: system and user message, and where the user message shows the given
    value (x for the output tasks, z for the input tasks) as [start, end) character offsets."""

    system: str
    user: str
    given_span: tuple[int, int]


def given_text(value: Any) -> str:
    """A given value as the release's renderer writes it into a prompt (`f"{value}"`: Python's str)."""
    return f"{value}"


def with_given(prompt: str, span: Sequence[int], value: Any) -> str:
    """`prompt` showing `value` where it showed its given value (`ReleasePrompt.given_span`)."""
    start, end = span
    return prompt[:start] + given_text(value) + prompt[end:]


def renderer_of(release_dir: Path | str) -> Path:
    """The release's prompt renderer in `release_dir`; FileNotFoundError where the folder holds none."""
    path = Path(release_dir) / RENDERER
    if not path.is_file():
        raise FileNotFoundError(
            f"no {RENDERER} under {release_dir}: --prompt-style release runs the release's own renderer, so "
            "--release-dir must be a checkout of Nickil21/round-trip-code-compression"
        )
    return path


def write_tables(folder: Path, texts: Sequence[str]) -> None:
    """The per-input files the renderer's listings read: AE's symbol counts and Huffman's codebook and padding,
    named `NNN_input_...` (the renderer finds them by the NNN prefix), as the release's data generator writes them."""
    for name in ("ae", "huffman"):
        (folder / "data" / "raw" / name / "output").mkdir(parents=True, exist_ok=True)
    for index, text in enumerate(texts):
        _bytes, codebook, padding = huffman_encode(text)
        tables = {"ae": ("freq", ae_freq(text)), "huffman": ("codebook", {"codebook": codebook, "padding": padding})}
        for name, (kind, table) in tables.items():
            path = folder / "data" / "raw" / name / "output" / f"{index:03d}_input_{kind}.json"
            path.write_text(json.dumps(table, ensure_ascii=True, indent=2), encoding="utf-8")


def run_renderer(
    renderer: Path, folder: Path, algorithm: str, item: Mapping[str, Any], run: str
) -> dict[int, dict[Task, tuple[str, str]]]:
    """The renderer on one item (its `ios`) in `folder`: per io index and task, (system, user) message."""
    source, target = folder / f"{run}_{algorithm}.jsonl", folder / f"{run}_{algorithm}_msg.jsonl"
    source.write_text(json.dumps(item, ensure_ascii=False) + "\n", encoding="utf-8")
    command = [sys.executable, str(renderer.resolve()), "--input_file", source.name, "--output_file", target.name]
    env = os.environ | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run(
        [*command, "--algorithm", algorithm], cwd=folder, capture_output=True, text=True, env=env, timeout=TIMEOUT_S
    )
    if done.returncode != 0 or not target.is_file():
        last = (done.stderr.strip().splitlines() or ["no error output"])[-1]
        raise ValueError(f"the release's renderer {renderer} failed on {algorithm} (exit {done.returncode}): {last}")
    prompts: dict[int, dict[Task, tuple[str, str]]] = {}
    for line in target.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        roles = {message["role"]: message["content"] for message in sample["messages"]}
        task = RELEASE_TASKS[sample["io_pred"]]
        prompts.setdefault(sample["ioid"], {})[task] = (roles.get("system", ""), roles["user"])
    missing = [i for i in range(len(item["ios"])) if len(prompts.get(i, {})) != len(RELEASE_TASKS)]
    if missing:
        raise ValueError(
            f"the release's renderer wrote no {algorithm} prompts for {len(missing)} of {len(item['ios'])} inputs "
            f"(first {missing[0]}): {(done.stdout.strip().splitlines() or [''])[-1]}"
        )
    return prompts


def locate(real: str, marked: str, marker: str, shown: str, where: str) -> tuple[int, int]:
    """The span of `shown` in `real`, where `marked` (the same prompt rendered with `marker`) shows the marker."""
    start = marked.find(marker)
    if start < 0 or marked.count(marker) != 1 or real != marked[:start] + shown + marked[start + len(marker) :]:
        raise ValueError(f"the release's renderer does not show the given value once in the {where} prompt")
    return start, start + len(shown)


def render_release_prompts(
    release_dir: Path | str, items: Sequence[InputItem], algorithms: Mapping[str, Algorithm]
) -> dict[str, list[dict[str, ReleasePrompt]]]:
    """Per algorithm, per input (in `items`' order), per task value: the release's own prompt."""
    renderer = renderer_of(release_dir)
    rendered: dict[str, list[dict[str, ReleasePrompt]]] = {}
    with tempfile.TemporaryDirectory(prefix="kt-release-prompts-") as tmp:
        folder = Path(tmp)
        write_tables(folder, [item.text for item in items])
        for name, algorithm in algorithms.items():
            head = {k: v for k, v in read_release_file(release_dir, name).items() if k != "ios"}
            outputs = [recorded_output(algorithm, item.text) for item in items]
            ios = [{"input": i.text, "output": z, "category": i.category} for i, z in zip(items, outputs, strict=True)]
            marks = [{"input": MARKER, "output": MARKER_OUTPUTS[name], "category": i.category} for i in items]
            real = run_renderer(renderer, folder, name, head | {"ios": ios}, "real")
            marked = run_renderer(renderer, folder, name, head | {"ios": marks}, "marked")
            rendered[name] = []
            for index, (item, z) in enumerate(zip(items, outputs, strict=True)):
                prompts = {}
                for task, (system, user) in real[index].items():
                    marker, shown = (MARKER, item.text) if task.predicts_z else (MARKER_OUTPUTS[name], z)
                    where = f"{name} {task.value} ({item.id})"
                    span = locate(user, marked[index][task][1], given_text(marker), given_text(shown), where)
                    prompts[task.value] = ReleasePrompt(system, user, span)
                rendered[name].append(prompts)
    return rendered


def release_system_message(rendered: Mapping[str, Sequence[Mapping[str, ReleasePrompt]]]) -> str:
    """The one system message of the rendered prompts (ValueError where they have several: one is sent per run)."""
    systems = {p.system for prompts in rendered.values() for per_input in prompts for p in per_input.values()}
    if len(systems) != 1:
        raise ValueError(f"the release's prompts carry {len(systems)} system messages; kt sends one per benchmark")
    return systems.pop()


__all__ = [
    "RELEASE_STYLE",
    "RELEASE_TASKS",
    "ReleasePrompt",
    "given_text",
    "release_system_message",
    "render_release_prompts",
    "renderer_of",
    "with_given",
]
