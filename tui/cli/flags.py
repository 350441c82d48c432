"""Command-line flags for run settings, generated from the `Settings` model: one declaration of each setting.

Each flag's type, choices, allowed range and default come from the model's field, so `--help` always says what the
settings say. Every flag defaults to None, so only the flags a person typed override the other layers (environment,
.env, svgagent.toml, user config). A few flags are spelt differently from their field (`--request-timeout`), and
`--samples` keeps `--runs` as an alias.
"""

from __future__ import annotations

import argparse
import enum
import types
import typing
from collections.abc import Iterable, Sequence
from typing import Any

from svgagent.core.settings import Settings, describe_field_limits

GROUPS: dict[str, tuple[str, ...]] = {
    "policy": ("model", "base_url", "temperature", "max_tokens", "reasoning_effort"),
    "judge": ("judge_model", "judge_base_url", "judge_mode"),
    "engine": ("concurrency", "judge_concurrency", "request_timeout_s", "max_retries", "render_size", "threshold"),
    "data": ("dataset", "rows", "samples"),
}
RUN_SETTINGS: tuple[str, ...] = tuple(name for names in GROUPS.values() for name in names)
SPELLING = {"request_timeout_s": "--request-timeout"}
ALIASES = {"samples": ("--runs",)}  # `--runs` came first; `samples` says what it is and clashes with nothing
STORE_HELP = "run store: a .db file or a directory (default: $SVGAGENT_HOME or the user data dir)"


def flag_name(name: str) -> str:
    return SPELLING.get(name, "--" + name.replace("_", "-"))


def _scalar(annotation: Any) -> Any:
    """int | None -> int; Literal[...] and enums stay as they are."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else str
    return annotation


def _default_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value)


def setting_help(name: str) -> str:
    """The field's description, its allowed range and its default: 'policy sampling temperature; a number from 0
    to 2 (default 0.8)'."""
    info = Settings.model_fields[name]
    text = info.description or name
    limits = describe_field_limits(name)
    if limits and limits != info.description and not limits.startswith("one of"):
        text += f"; {limits}"
    default = _default_text(info.default)
    return text + (f" (default {default})" if default is not None else "")


def add_setting(parser: argparse.ArgumentParser | Any, name: str) -> None:
    """Add the flag of setting ``name`` to ``parser`` (a parser or an argument group)."""
    info = Settings.model_fields[name]
    kind = _scalar(info.annotation)
    kwargs: dict[str, Any] = {"dest": name, "default": None, "help": setting_help(name)}
    if typing.get_origin(kind) is typing.Literal:
        kwargs["choices"] = list(typing.get_args(kind))
    elif isinstance(kind, type) and issubclass(kind, enum.Enum):
        kwargs["choices"] = [member.value for member in kind]
    elif kind in (int, float):
        kwargs["type"] = kind
        kwargs["metavar"] = "N" if kind is int else "X"
    else:
        kwargs["metavar"] = name.upper().removesuffix("_S")
    parser.add_argument(flag_name(name), *ALIASES.get(name, ()), **kwargs)


def add_settings(parser: argparse.ArgumentParser, names: Iterable[str] | None = None, *,
                 title: str | None = None) -> None:
    """The flags of ``names`` (default: every run setting, in its groups) under ``title``."""
    if names is None:
        for group, members in GROUPS.items():
            target = parser.add_argument_group(group)
            for name in members:
                add_setting(target, name)
        return
    target = parser.add_argument_group(title) if title else parser
    for name in names:
        add_setting(target, name)


def add_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", help=STORE_HELP)


def explicit_settings(args: argparse.Namespace, names: Sequence[str] = RUN_SETTINGS) -> dict[str, Any]:
    """The settings a person gave as flags (None: not given), plus `--store` and `--cache`/`--no-cache`."""
    given = {name: getattr(args, name, None) for name in (*names, "store")}
    if getattr(args, "no_cache", False):
        given["cache"] = False
    elif getattr(args, "cache", False):
        given["cache"] = True
    return {k: v for k, v in given.items() if v is not None}
