"""`kt rtce ...`: encode and decode with the RTCE compression algorithms, and build the benchmark."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kt_train.cli import fail
from tracegen.algorithms import ALGORITHMS, HUFFMAN_TARGETS, get_algorithm
from tracegen.inputs import FAMILIES
from tracegen.prompts import BUILD_PROMPT_STYLES


def _encode(args: argparse.Namespace) -> int:
    algorithm = get_algorithm(args.algorithm)
    z = algorithm.encode(args.text)
    print(json.dumps({"z": algorithm.to_json(z), "freq": algorithm.freq(args.text)}, ensure_ascii=False))
    return 0


def _decode(args: argparse.Namespace) -> int:
    algorithm = get_algorithm(args.algorithm)
    freq: dict[str, Any] | None = None
    if args.freq is not None:
        freq = json.loads(args.freq)  # null (what `encode` prints for LZW and RLE): no frequency dict
        if freq is not None and not isinstance(freq, dict):
            raise ValueError("--freq must be a JSON object or null")
    if algorithm.needs_freq and freq is None:
        raise ValueError(f"{algorithm.name} decoding needs --freq")
    z = algorithm.from_json(json.loads(args.z))
    print(json.dumps(algorithm.decode(z, freq), ensure_ascii=False))
    return 0


def _build(args: argparse.Namespace) -> int:
    from tracegen.benchmark import build_benchmark
    from tracegen.inputs import LengthRange

    summary = build_benchmark(
        output=Path(args.output),
        seed=args.seed,
        num_inputs=args.num_inputs,
        style=args.prompt_style,
        release_dir=args.release_dir,
        families=args.families,
        huffman_target=args.huffman_target,
        lengths=LengthRange(*args.input_lengths) if args.input_lengths else None,
    )
    print(json.dumps(summary, indent=2, ensure_ascii=False, default=str))
    return 0


def _guarded(handler: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except json.JSONDecodeError as exc:
            return fail(f"invalid JSON: {exc}")
        except (ValueError, KeyError, TypeError, IndexError, RecursionError) as exc:
            return fail(str(exc) or type(exc).__name__)

    return run


def register(subparsers: Any) -> None:
    """Add the `rtce` command group."""
    rtce = subparsers.add_parser("rtce", help="RTCE round-trip code execution data")
    commands = rtce.add_subparsers(dest="rtce_command", metavar="SUBCOMMAND", required=True)
    names = sorted(ALGORITHMS)

    encode = commands.add_parser("encode", help='Print {"z": main_solution(TEXT), "freq": FREQ_DICT} as JSON.')
    encode.add_argument("--algorithm", required=True, choices=names)
    encode.add_argument("text", metavar="TEXT")
    encode.set_defaults(handler=_guarded(_encode))

    decode = commands.add_parser("decode", help="Print the text decoded from Z_JSON as a JSON string.")
    decode.add_argument("--algorithm", required=True, choices=names)
    decode.add_argument(
        "--freq", metavar="JSON", help="FREQ_DICT as a JSON object (ae, huffman; null or omitted for lzw, rle)"
    )
    decode.add_argument("z", metavar="Z_JSON")
    decode.set_defaults(handler=_guarded(_decode))

    build = commands.add_parser("build", help="Build the RTCE benchmark into DIR; print its summary as JSON.")
    build.add_argument("--output", required=True, metavar="DIR")
    build.add_argument("--seed", type=int, default=42)
    build.add_argument("--num-inputs", type=int, default=250)
    build.add_argument(
        "--release-dir",
        metavar="DIR",
        help="the paper's released inputs instead: a checkout of Nickil21/round-trip-code-compression "
        "(or a folder of its four <algorithm>/data.json); --seed, --num-inputs and --families do not apply",
    )
    build.add_argument(
        "--families", nargs="+", metavar="FAMILY", help=f"generate only these families (of {', '.join(FAMILIES)})"
    )
    build.add_argument(
        "--input-lengths",
        nargs=2,
        type=int,
        metavar=("MIN", "MAX"),
        help="cut each generated input to a window of MIN..MAX characters (drawn per input): short inputs for small "
        "models (default: the paper's full lengths)",
    )
    build.add_argument(
        "--prompt-style",
        choices=BUILD_PROMPT_STYLES,
        default="paper",
        help="paper: one generic worked example and the release's system message (default); release-blind: the "
        "release's blinded variant; demo: a worked example of the same algorithm and task; release: the release's "
        "own prompts, rendered by its src/data/build_codeio_msg.py from the --release-dir checkout (runs its code)",
    )
    build.add_argument(
        "--huffman-target",
        choices=HUFFMAN_TARGETS,
        help="Huffman's z: triple (encoded bytes, codebook, padding: the paper's listings; the default) or bytes (the "
        "release's: the packed bytes only, the decoder reads sum(FREQ_DICT) symbols; the default and only choice of "
        "--prompt-style release)",
    )
    build.set_defaults(handler=_guarded(_build))
