"""Command-line options derived from config dataclasses: one declaration per option.

`add_options(parser, Config)` adds one flag per field (`max_new_tokens` -> `--max-new-tokens`) from the field's type,
default and `metadata` (`help`, `choices`, `metavar`, `aliases`), with the default shown in `--help`;
`options_from(Config, args)` builds the config from the parsed flags, over the values of `--config FILE` (YAML or
JSON: what a recipe hands an evaluation) when one is given, flags winning. Types: str, int, float, bool (default
False: `--flag`; default True: `--flag` / `--no-flag`), `X | None`, `Literal[...]`, `list[X]` (one or more values)
`dict[str, str]` (repeatable `KEY=VALUE`) and `dict[str, list[str]]` (repeatable `KEY=V1,V2`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

C = TypeVar("C")
CONFIG_FLAG = "--config"
_OPTIONS = "_kt_options"


def flag(name: str) -> str:
    """The flag of a field name."""
    return "--" + name.replace("_", "-")


def _strip_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key or not value:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _key_values(text: str) -> tuple[str, list[str]]:
    key, value = _key_value(text)
    return key, [v for v in value.split(",") if v]


def _scalar_kwargs(annotation: Any) -> dict[str, Any]:
    if get_origin(annotation) is Literal:
        choices = list(get_args(annotation))
        return {"type": type(choices[0]), "choices": choices}
    if annotation in (int, float, str):
        return {"type": annotation}
    raise TypeError(f"no command-line form for the type {annotation!r}")


def _default_text(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return " ".join(map(str, value)) or "none"
    return "none" if value is None else str(value)


def _field_default(item: dataclasses.Field[Any]) -> Any:
    if item.default is not dataclasses.MISSING:
        return item.default
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return dataclasses.MISSING


def add_options(
    parser: argparse.ArgumentParser, config_class: type[Any], exclude: Sequence[str] = (), config_file: bool = True
) -> None:
    """One flag per field of `config_class` (fields in `exclude` left out), and `--config FILE` when `config_file`."""
    hints = typing.get_type_hints(config_class)
    known: list[str] = list(parser.get_default(_OPTIONS) or [])
    for item in dataclasses.fields(config_class):
        if item.name in exclude or not item.init:
            continue
        annotation = _strip_optional(hints[item.name])
        default = _field_default(item)
        meta = item.metadata
        kwargs: dict[str, Any] = {"dest": item.name, "default": argparse.SUPPRESS}
        if annotation is bool:
            kwargs["action"] = argparse.BooleanOptionalAction if default is True else "store_true"
        elif get_origin(annotation) in (list, tuple):
            kwargs |= _scalar_kwargs(get_args(annotation)[0]) | {"nargs": "+"}
        elif get_origin(annotation) is dict:
            listed = get_origin(get_args(annotation)[1]) is list
            kwargs |= {"type": _key_values if listed else _key_value, "action": "append"}
            kwargs["metavar"] = meta.get("metavar", "KEY=V1,V2" if listed else "KEY=VALUE")
        else:
            kwargs |= _scalar_kwargs(annotation)
        if "choices" in meta:
            kwargs["choices"] = list(meta["choices"])
        if "metavar" in meta:
            kwargs["metavar"] = meta["metavar"]
        required = default is dataclasses.MISSING
        shown = "required" if required else f"default: {_default_text(default)}"
        kwargs["help"] = f"{meta.get('help', '')} ({shown})".strip().replace("%", "%%")
        parser.add_argument(flag(item.name), *meta.get("aliases", ()), **kwargs)
        known.append(item.name)
    if config_file and parser.get_default("_kt_config_flag") is None:
        parser.add_argument(
            CONFIG_FLAG,
            metavar="FILE",
            default=None,
            dest="_kt_config",
            help="YAML or JSON file of option values (field names as keys); flags given override it",
        )
        parser.set_defaults(_kt_config_flag=True)
    parser.set_defaults(**{_OPTIONS: known})


def add_options_later(
    parser: argparse.ArgumentParser,
    load_config_class: Callable[[], type[Any]],
    exclude: Sequence[str] = (),
    config_file: bool = True,
) -> None:
    """`add_options` when the parser is first used (`kt_train.cli.OneLineParser.defer`), so that building the `kt`
    parser imports no config module; at once for any other parser."""

    def populate(target: argparse.ArgumentParser) -> None:
        add_options(target, load_config_class(), exclude, config_file)

    defer = getattr(parser, "defer", None)
    if defer is None:
        populate(parser)
    else:
        defer(populate)


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The option values of a YAML or JSON config file (a mapping)."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"{CONFIG_FLAG} {file}: no such file")
    text = file.read_text(encoding="utf-8")
    if file.suffix == ".json":
        try:
            values = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{file}: not JSON ({exc})") from None
    else:
        import yaml

        try:
            values = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"{file}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(values, dict):
        raise ValueError(f"{file}: expected a mapping of option names to values")
    return values


def _names(config_class: type[Any]) -> set[str]:
    return {item.name for item in dataclasses.fields(config_class) if item.init}


def options_from(config_class: type[C], args: argparse.Namespace, **fixed: Any) -> C:
    """The config of the parsed `args` (over `--config FILE`, if given); `fixed` values are set by the caller.

    A missing required option or a value of the wrong kind is one `ValueError` naming the option."""
    names = _names(config_class)
    values: dict[str, Any] = {}
    config_path = getattr(args, "_kt_config", None)
    if config_path is not None:
        from_file = read_config_file(config_path)
        unknown = sorted(set(from_file) - set(getattr(args, _OPTIONS, [])))
        if unknown:
            raise ValueError(f"{config_path}: unknown option(s) {', '.join(unknown)}")
        values |= {k: v for k, v in from_file.items() if k in names}
    values |= {name: getattr(args, name) for name in names if hasattr(args, name)}
    hints = typing.get_type_hints(config_class)
    for name, value in list(values.items()):
        origin = get_origin(_strip_optional(hints[name]))
        if origin is dict and isinstance(value, list):
            values[name] = dict(value)
        elif origin is tuple and isinstance(value, list):
            values[name] = tuple(value)
    values |= fixed
    missing = [
        flag(item.name)
        for item in dataclasses.fields(config_class)
        if item.init and item.name not in values and _field_default(item) is dataclasses.MISSING
    ]
    if missing:
        raise ValueError(f"missing required option(s): {', '.join(missing)}")
    _check_types(config_class, values, hints)
    return config_class(**values)


_SIMPLE = (bool, int, float, str)


def simple_types(annotation: Any) -> tuple[type, ...] | None:
    """The types a number, flag or text field of this annotation accepts (a float field takes an int, an optional one
    None); None for any other field (lists, mappings, enums: checked elsewhere or not at all)."""
    if annotation in _SIMPLE:
        return (int, float) if annotation is float else (annotation,)
    arguments = get_args(annotation)
    if get_origin(annotation) in (Union, types.UnionType) and arguments:
        simple = [a for a in arguments if a is not type(None)]
        if all(a in _SIMPLE for a in simple):
            return (*(t for a in simple for t in ((int, float) if a is float else (a,))), type(None))
    return None


def fits(value: Any, accepted: tuple[type, ...]) -> bool:
    """`value` is of one of the `accepted` types, a bool only where bool is one (YAML's `true` is no number)."""
    return isinstance(value, accepted) and not (isinstance(value, bool) and bool not in accepted)


def _check_types(config_class: type[Any], values: Mapping[str, Any], hints: Mapping[str, Any]) -> None:
    """Values read from a config file have the field's type (flags were converted by argparse already)."""
    for name, value in values.items():
        annotation = hints[name]
        if value is None and _strip_optional(annotation) is not annotation:
            continue
        annotation = _strip_optional(annotation)
        origin = get_origin(annotation)
        if origin is Literal:
            ok = value in get_args(annotation)
        elif origin in (list, tuple):
            ok = isinstance(value, list | tuple)
        elif origin is dict:
            ok = isinstance(value, dict)
        else:
            accepted = simple_types(annotation)
            ok = accepted is None or fits(value, accepted)
        if not ok:
            raise ValueError(f"{flag(name)}: {value!r} is not a valid {getattr(annotation, '__name__', annotation)}")


def command_line(prog: str, config: Any, exclude: Sequence[str] = ()) -> str:
    """The command that makes `config` again (`prog` then a flag per field that differs from its default): the
    provenance line of a dataset card."""
    parts = [prog]
    for item in dataclasses.fields(config):
        value = getattr(config, item.name)
        if item.name in exclude or not item.init or value == _field_default(item):
            continue
        if isinstance(value, bool):
            parts.append(flag(item.name) if value else "--no-" + flag(item.name)[2:])
        elif isinstance(value, dict):
            parts += [f"{flag(item.name)} {k}={','.join(v) if isinstance(v, list) else v}" for k, v in value.items()]
        elif isinstance(value, list | tuple):
            parts.append(" ".join([flag(item.name), *map(str, value)]))
        else:
            parts.append(f"{flag(item.name)} {value}")
    return " ".join(parts)


def write_config_file(path: str | Path, config: Any, exclude: Sequence[str] = ()) -> Path:
    """Write a config dataclass as the JSON file `--config` reads (what a recipe hands a separate process)."""
    values = {k: v for k, v in dataclasses.asdict(config).items() if k not in exclude}
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(values, indent=2) + "\n", encoding="utf-8")
    return file


__all__ = [
    "CONFIG_FLAG",
    "add_options",
    "add_options_later",
    "command_line",
    "fits",
    "flag",
    "options_from",
    "read_config_file",
    "simple_types",
    "write_config_file",
]
