"""Small folders in the formats of the RTCE release (Nickil21/round-trip-code-compression), made by the tests.

`write_release` writes the release's `data/processed/<alg>/data.json` (or `<alg>.json`) for a few inputs;
`write_renderer` a prompt renderer in the release's shape (`src/data/build_codeio_msg.py` with `src/core/utils.py`
and `src/core/prompts.py`): the same command line, input and output files, per-input files under
`data/raw/<alg>/output/`, task names and task order, and the same placement of the given value, but templates and
listings of its own. `expected_prompt` is what that renderer writes, computed here independently of the product.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from tracegen.algorithms import ALGORITHMS

# (input, category) in the release's format: category names as the release spells them, some long AE inputs.
RELEASE_INPUTS = [
    ("UUUUUUUU", "string_char_repeat"),
    ("ACGTTGCAACGGT", "string_dna_random"),
    ("2024-01-01 12:00:00 WARNING disk usage at 91% on /dev/sda1 (threshold 90%)", "log_warning"),
    ("app:\n  name: shop\n  port: 8080\n  debug: false\n", "yaml_app_config"),
    ("id,qty,price\n1,4,9.50\n2,1,3.25\n", "tabular_csv_numeric"),
    ("ABABAB", "string_alternating_pattern"),
]
SYSTEM = "Fixture system message: check the round trip."
RELEASE_TASKS = (  # the release's task names, in its order
    "output_execution_prediction",
    "input_execution_prediction",
    "output_execution_prediction_with_inversion",
    "input_execution_prediction_with_inversion",
)
OURS = {  # the release's task name -> ours
    "output_execution_prediction": "output_pred",
    "input_execution_prediction": "input_pred",
    "output_execution_prediction_with_inversion": "output_pred_inv",
    "input_execution_prediction_with_inversion": "input_pred_inv",
}


def release_output(algorithm: str, text: str) -> Any:
    """What the release's data.json records: the encoder output (Huffman: its bytes only)."""
    z = ALGORITHMS[algorithm].to_json(ALGORITHMS[algorithm].encode(text))
    return z[0] if algorithm == "huffman" else z


def write_release(root: Path, inputs: list[tuple[str, str]] = RELEASE_INPUTS, layout: str = "checkout") -> Path:
    """A release folder of the given layout: a checkout (data/processed/<alg>/data.json) or <alg>.json files."""
    for algorithm in ALGORITHMS:
        ios = [{"input": x, "output": release_output(algorithm, x), "category": c} for x, c in inputs]
        data = {
            "problem_description": f"Compress the input string using {algorithm.upper()} compression.",
            "algorithm": algorithm.upper(),
            "ios": ios,
        }
        path = (
            root / "data" / "processed" / algorithm / "data.json"
            if layout == "checkout"
            else root / f"{algorithm}.json"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=4), encoding="utf-8")
    return root


_UTILS = """
import glob
import json
import os


def get_freq_dict(ioid, algo, base_path="data/raw"):
    suffix = "_freq.json" if algo == "ae" else "_codebook.json"
    matches = glob.glob(os.path.join(base_path, algo, "output", f"{ioid:03d}_*{suffix}"))
    if not matches:
        return {}
    with open(matches[0], encoding="utf-8") as f:
        return json.load(f)


def build_messages(prompt, system_message=None):
    return [{"role": "system", "content": system_message}, {"role": "user", "content": prompt}]
"""
_TEMPLATES = """
GIVE_X = "Fixture task: run it.\\n\\nThe input:\\n\\n\\"<<<<input>>>>\\"\\n\\n"
GIVE_X += "[PYTHON]\\n<<<<refcode>>>>\\n[/PYTHON]\\nAnswer type: <<<<return_type>>>>.\\n"
GIVE_Z = "Fixture task: invert it.\\n\\nThe output:\\n\\n<<<<output>>>>\\n\\n[PYTHON]\\n<<<<refcode>>>>\\n[/PYTHON]\\n"
GIVE_Z += "Answer type: <<<<return_type>>>>.\\n"
"""
_RENDERER = """
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from core.prompts import GIVE_X, GIVE_Z
from core.utils import build_messages, get_freq_dict

TASKS = ["output_execution_prediction", "input_execution_prediction",
         "output_execution_prediction_with_inversion", "input_execution_prediction_with_inversion"]
HINTS = {"lzw": "codes", "ae": "a float", "rle": "runs", "huffman": "bytes"}

parser = argparse.ArgumentParser()
parser.add_argument("--input_file")
parser.add_argument("--output_file")
parser.add_argument("--algorithm")
args = parser.parse_args()
out = open(args.output_file, "w", encoding="utf-8")
for iid, line in enumerate(open(args.input_file, encoding="utf-8")):
    item = json.loads(line)
    for ioid, io in enumerate(item["ios"]):
        x, z = io["input"], io["output"]
        extra = ""
        if args.algorithm == "ae":
            extra = f"\\n    freq = {get_freq_dict(ioid=ioid, algo='ae')}"
        elif args.algorithm == "huffman":
            freq = {k: v for k, v in get_freq_dict(ioid=ioid, algo="ae").items() if k != "EOF"}
            d = get_freq_dict(ioid=ioid, algo="huffman")
            extra = f"\\n    freq = {freq}\\n    codebook = {d['codebook']}\\n    padding = {d['padding']}"
        enc = f"def main_solution(text):{extra}\\n    return encode(text)"
        dec = f"def main_solution(code):{extra}\\n    return decode(code)"
        for n_task, task in enumerate(TASKS):
            code = enc if task in (TASKS[0], TASKS[3]) else dec
            hint = "a string" if task.startswith("input_") else HINTS[args.algorithm]
            if task == "input_execution_prediction":
                prompt = GIVE_X.replace("<<<<input>>>>", f"{z}")
            elif task.startswith("output_"):
                prompt = GIVE_X.replace("<<<<input>>>>", f"{x}")
            else:
                prompt = GIVE_Z.replace("<<<<output>>>>", f"{z}")
            prompt = prompt.replace("<<<<refcode>>>>", code).replace("<<<<return_type>>>>", hint)
            sample = {"id": f"{iid}_{ioid}_{n_task}", "ioid": ioid, "io_pred": task, "input": x, "output": z,
                      "messages": build_messages(prompt, system_message=SYSTEM)}
            out.write(json.dumps(sample, ensure_ascii=False) + "\\n")
out.close()
"""


def write_renderer(root: Path) -> Path:
    """The renderer files in the release's layout under `root` (a release folder)."""
    files = {
        "src/core/__init__.py": "",
        "src/core/utils.py": _UTILS,
        "src/core/prompts.py": _TEMPLATES,
        "src/data/build_codeio_msg.py": _RENDERER.replace("SYSTEM)", f"{SYSTEM!r})"),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _huffman(text: str) -> tuple[dict[str, str], int]:
    _bytes, codebook, padding = ALGORITHMS["huffman"].encode(text)
    return codebook, padding


def expected_prompt(algorithm: str, task: str, x: str, z: Any = None) -> str:
    """The user prompt the fixture renderer writes for input `x` (shown z: `z`, by default the recorded one)."""
    z = release_output(algorithm, x) if z is None else z
    extra = ""
    if algorithm == "ae":
        extra = f"\n    freq = {dict(Counter(x)) | {'EOF': 1}}"
    elif algorithm == "huffman":
        codebook, padding = _huffman(x)
        extra = f"\n    freq = {dict(Counter(x))}\n    codebook = {codebook}\n    padding = {padding}"
    shows_encoder = task in ("output_pred", "input_pred_inv")
    name, call = ("text", "encode") if shows_encoder else ("code", "decode")
    code = f"def main_solution({name}):{extra}\n    return {call}({name})"
    hints = {"lzw": "codes", "ae": "a float", "rle": "runs", "huffman": "bytes"}
    hint = "a string" if task.startswith("input") else hints[algorithm]
    if task == "input_pred_inv":
        head = f"Fixture task: invert it.\n\nThe output:\n\n{z}\n\n"
    else:
        head = f'Fixture task: run it.\n\nThe input:\n\n"{z if task == "input_pred" else x}"\n\n'
    return f"{head}[PYTHON]\n{code}\n[/PYTHON]\nAnswer type: {hint}.\n"


__all__ = [
    "OURS",
    "RELEASE_INPUTS",
    "RELEASE_TASKS",
    "SYSTEM",
    "expected_prompt",
    "release_output",
    "write_release",
    "write_renderer",
]
