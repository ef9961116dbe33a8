"""The participants of a round trip: language models (any HF model, optionally with a LoRA adapter) and deterministic
"models" that make the protocol testable without an LM.

Spec strings (``--generators`` / ``--extractors``):

- ``[LABEL=]MODEL[@ADAPTER]``: a language model (embedded name, local path or hub id), with a LoRA adapter folder
  that is merged into the weights before generating (the paper merges adapters before evaluation);
- generators ``sexpr`` and ``json``: the lossless S-expression / JSON-AST serializations (the NL-tax reference,
  kind ``structured``: the leakage guard does not apply to them);
- generator ``procedural``: the ordinal-step NL templates of ``dsl.expr.procedural`` (kind ``nl``: guarded as any
  word problem);
- ``LABEL=FILE.jsonl``: outputs made elsewhere (an API model, another machine), rows ``id`` + ``completions`` (a
  list of one text) as in every kt evaluation: ``id`` is the expression id for a generator's word problem,
  ``EXPR_ID/GENERATOR`` for an extractor's answer; a missing row or an empty list counts as no output;
- extractor ``parser``: a rule-based reader that recovers exactly what the deterministic generators write
  (S-expression, JSON-AST, procedural steps or plain infix) and answers nothing otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dsl.expr.domains import get_domain
from dsl.expr.procedural import parse_procedure, render_procedure
from dsl.expr.prompts import ANSWER_PREFIX
from dsl.expr.serialize import parse_infix, parse_json_ast, parse_sexpr, to_infix, to_json_ast, to_sexpr
from dsl.expr.suite import hashed_rng
from dsl.expr.tree import Node
from kt_train.hf_dataset import ID_PART

Kind = Literal["lm", "file", "structured", "procedural", "parser"]
# the deterministic participants of each role and their kind
GENERATOR_KINDS: dict[str, Kind] = {"sexpr": "structured", "json": "structured", "procedural": "procedural"}
EXTRACTOR_KINDS: dict[str, Kind] = {"parser": "parser"}


@dataclass(frozen=True)
class Participant:
    """A generator or extractor of the round trip."""

    label: str
    kind: Kind
    model: str | None = None
    adapter: str | None = None
    path: str | None = None

    @property
    def generator_kind(self) -> str:
        """`structured` for the lossless serializers, `nl` for everything that writes prose."""
        return "structured" if self.kind == "structured" else "nl"


def parse_participant(spec: str, role: Literal["generator", "extractor"]) -> Participant:
    """A participant from its spec string; one clear error for a bad one (e.g. a missing adapter folder)."""
    spec = spec.strip()
    if not spec:
        raise ValueError(f"empty {role} spec")
    own, other = (GENERATOR_KINDS, EXTRACTOR_KINDS) if role == "generator" else (EXTRACTOR_KINDS, GENERATOR_KINDS)
    if spec in own:
        return Participant(spec, own[spec])
    if spec in other:
        raise ValueError(f"{spec!r} is not a {role}; deterministic {role}s: {', '.join(own)}")
    label, sep, rest = spec.partition("=")
    if not sep:
        label, rest = "", spec
    if label and not ID_PART.fullmatch(label):
        raise ValueError(f"{role} label {label!r}: letters, digits and _.+- only (it is part of the record ids)")
    if rest.endswith(".jsonl"):
        if not label:
            raise ValueError(f"name the outputs of {rest}: LABEL={rest}")
        if not Path(rest).is_file():
            raise FileNotFoundError(f"no file {rest} ({role} {label})")
        return Participant(label, "file", path=rest)
    model, _, adapter = rest.partition("@")
    if not model:
        raise ValueError(f"{role} spec {spec!r} names no model (LABEL=MODEL[@ADAPTER])")
    if adapter and not (Path(adapter) / "adapter_config.json").is_file():
        raise FileNotFoundError(f"no adapter_config.json in {adapter} ({role} {spec!r})")
    if not label:
        label = Path(model.rstrip("/")).name + (f"+{Path(adapter.rstrip('/')).name}" if adapter else "")
        if not ID_PART.fullmatch(label):
            raise ValueError(f"{role} {spec!r}: name it LABEL={spec} (letters, digits and _.+-: part of record ids)")
    return Participant(label, "lm", model, adapter or None)


def deterministic_word_problem(participant: Participant, node: Node, domain: str, expr_id: str, seed: int) -> str:
    """What a deterministic generator writes for `node`."""
    if participant.label == "sexpr":
        return to_sexpr(node)
    if participant.label == "json":
        return to_json_ast(node)
    return render_procedure(node, domain, hashed_rng("procedural", seed, expr_id))


def parser_extract(word_problem: str, domain: str) -> str | None:
    """The rule-based extractor: the first reading that parses (S-expression, JSON-AST, procedure, infix)."""
    syntax = get_domain(domain).syntax
    text = word_problem.strip()
    readers = (parse_sexpr, parse_json_ast, lambda t: parse_procedure(t, domain), lambda t: parse_infix(t, syntax))
    for read in readers:
        try:
            node = read(text)
        except (ValueError, KeyError, TypeError):
            continue
        return f"{ANSWER_PREFIX} {to_infix(node, syntax)}"
    return None


def read_outputs(participant: Participant) -> dict[str, str | None]:
    """The texts of a file participant by row id (`eval.predictions` rows: `id` + `completions`, one text or none:
    the round trip takes one word problem per expression and one answer per word problem)."""
    from eval.predictions import FIELD, read_prediction_rows

    assert participant.path is not None
    outputs: dict[str, str | None] = {}
    for number, _, key, texts in read_prediction_rows(participant.path):
        if len(texts) > 1:
            raise ValueError(
                f"{participant.path}:{number}: `{FIELD}` holds {len(texts)} texts; the round trip takes one"
            )
        outputs[key] = texts[0] if texts else None
    return outputs


def model_info(backend: Any) -> dict[str, Any]:
    """Parameters (billions) and family (the config's `model_type`) of a loaded model; None where unknown (vLLM)."""
    model = getattr(backend, "model", None)
    if model is None or not hasattr(model, "num_parameters"):
        return {"params_b": None, "family": None}
    family = getattr(getattr(model, "config", None), "model_type", None)
    return {"params_b": round(model.num_parameters() / 1e9, 4), "family": family}


__all__ = [
    "EXTRACTOR_KINDS",
    "GENERATOR_KINDS",
    "Participant",
    "deterministic_word_problem",
    "model_info",
    "parse_participant",
    "parser_extract",
    "read_outputs",
]
