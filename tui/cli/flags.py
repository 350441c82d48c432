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

if typing.TYPE_CHECKING:
    from svgagent.core.config.settings import Settings

GROUPS: dict[str, tuple[str, ...]] = {
    "policy": ("model", "base_url", "temperature", "max_tokens", "reasoning_effort"),
    "judge": ("judge_model", "judge_base_url", "judge_mode", "judge_profile"),
    "engine": (
        "concurrency",
        "judge_concurrency",
        "workers",
        "request_timeout_s",
        "max_retries",
        "render_size",
        "renderer",
        "chromium_path",
        "threshold",
    ),
    "data": ("dataset", "rows", "samples"),
    "cost": ("budget",),
}
RUN_SETTINGS: tuple[str, ...] = tuple(name for names in GROUPS.values() for name in names)
SPELLING = {"request_timeout_s": "--request-timeout", "chromium_path": "--chromium"}
ALIASES = {"samples": ("--runs",)}  # `--runs` came first; `samples` says what it is and clashes with nothing
# What a setting whose default is None does when it is not given (said in its flag's help, like any default).
NONE_DEFAULTS = {"rows": "all rows", "reasoning_effort": "none: not sent", "chromium_path": "chromium on PATH"}
STORE_HELP = "run store: a .db file or a directory (default: $SVGAGENT_HOME or the user data dir)"


class LazyArgumentsParser(argparse.ArgumentParser):
    """A (sub)command's parser that adds some of its arguments only when it first parses or prints its help.

    The flags generated from the `Settings` model import pydantic and pydantic-settings (most of `svgagent --help`'s
    start-up time); `svgagent --help` and every other command never need the flags of `eval`. :func:`defer` hands a
    parser such a step; any other parser runs it at once.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deferred: list[typing.Callable[[], None]] = []

    def defer(self, add: typing.Callable[[], None]) -> None:
        self._deferred.append(add)

    def _complete(self) -> None:
        while self._deferred:
            self._deferred.pop(0)()

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._complete()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._complete()
        return super().format_usage()

    def format_help(self) -> str:
        self._complete()
        return super().format_help()


def defer(parser: argparse.ArgumentParser | Any, add: typing.Callable[[], None]) -> None:
    """Run ``add`` (which adds arguments to ``parser``) when the parser is first used, or now if it cannot wait."""
    later = getattr(parser, "defer", None)
    if later is None:
        add()
    else:
        later(add)


def _settings_model() -> type[Settings]:
    from svgagent.core.config.settings import Settings

    return Settings


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
    from svgagent.core.config.settings import describe_field_limits

    info = _settings_model().model_fields[name]
    text = info.description or name
    limits = describe_field_limits(name)
    if limits and limits != info.description and not limits.startswith("one of"):
        text += f"; {limits}"
    default = _default_text(info.default) or NONE_DEFAULTS.get(name)
    return text + (f" (default {default})" if default is not None else "")


def add_setting(parser: argparse.ArgumentParser | Any, name: str) -> None:
    """Add the flag of setting ``name`` to ``parser`` (a parser or an argument group); deferred (see
    :class:`LazyArgumentsParser`) on a parser that can wait."""
    defer(parser, lambda: _add_setting_now(parser, name))


def _add_setting_now(parser: argparse.ArgumentParser | Any, name: str) -> None:
    info = _settings_model().model_fields[name]
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


def add_settings(
    parser: argparse.ArgumentParser, names: Iterable[str] | None = None, *, title: str | None = None
) -> None:
    """The flags of ``names`` (default: every run setting, in its groups) under ``title``; deferred like
    :func:`add_setting`."""
    defer(parser, lambda: _add_settings_now(parser, names, title))


def _add_settings_now(parser: argparse.ArgumentParser, names: Iterable[str] | None, title: str | None) -> None:
    if names is None:
        for group, members in GROUPS.items():
            target = parser.add_argument_group(group)
            for name in members:
                _add_setting_now(target, name)
        return
    target = parser.add_argument_group(title) if title else parser
    for name in names:
        _add_setting_now(target, name)


def add_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", help=STORE_HELP)


def add_json(parser: argparse.ArgumentParser, what: str = "one JSON object") -> None:
    """``--json``: machine-readable output on stdout instead of the tables."""
    parser.add_argument("--json", action="store_true", help=f"print {what} to stdout")


def explicit_settings(args: argparse.Namespace, names: Sequence[str] = RUN_SETTINGS) -> dict[str, Any]:
    """The settings a person gave as flags (None: not given), plus `--store` and `--cache`/`--no-cache`."""
    given = {name: getattr(args, name, None) for name in (*names, "store")}
    if getattr(args, "no_cache", False):
        given["cache"] = False
    elif getattr(args, "cache", False):
        given["cache"] = True
    return {k: v for k, v in given.items() if v is not None}
