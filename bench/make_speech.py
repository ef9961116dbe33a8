"""Speech to cut into MFCC sequences, made on this machine: no speech corpus is here and nothing is downloaded.

`espeak-ng` (`apt-get install espeak-ng`) reads consecutive chunks of `--words` words of a text file, one WAV a chunk
(22,050 Hz, 16 bit), cycling through `--voices` and speaking 150, 155, ... words a minute. `kt kt-data --modality
mfcc` then cuts the WAVs into sequences (docs/dsl.md, "Execution feedback at equal training compute"):

    python bench/make_speech.py --text ../shared/papers/003_*.txt --output speech
    kt kt-data --modality mfcc --input speech --sequence-length 64 --max-bytes 12800 --output mfcc64
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", type=Path, required=True, help="text file to read aloud")
    parser.add_argument("--output", type=Path, required=True, help="directory for utt00.wav, utt01.wav, ...")
    parser.add_argument("--utterances", type=int, default=10, help="number of WAV files")
    parser.add_argument("--words", type=int, default=40, help="words of the text in each utterance")
    parser.add_argument("--voices", nargs="+", default=["en-us", "en-gb", "en"], help="espeak-ng voices, in turn")
    args = parser.parse_args(argv)
    if shutil.which("espeak-ng") is None:
        print("error: espeak-ng is missing (apt-get install espeak-ng)", file=sys.stderr)
        return 1
    words = args.text.read_text(encoding="utf-8").split()
    args.output.mkdir(parents=True, exist_ok=True)
    for i in range(args.utterances):
        chunk = words[i * args.words : (i + 1) * args.words]
        if not chunk:
            break
        voice, speed = args.voices[i % len(args.voices)], 150 + 5 * i
        wav = args.output / f"utt{i:02d}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(wav), " ".join(chunk)], check=True)
        print(f"{wav}: {voice}, {speed} words a minute, {len(chunk)} words")
    return 0


if __name__ == "__main__":
    sys.exit(main())
