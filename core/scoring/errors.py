"""Exceptions with messages meant for people: each carries one clear line, never a traceback."""

from __future__ import annotations


class SvgAgentError(Exception):
    """Base class: ``str(err)`` is a one-line message fit to show a user."""


class ConfigError(SvgAgentError):
    """Invalid settings, missing keys or a bad dataset (CLI exit code 2)."""


class DatasetError(ConfigError):
    """The dataset file cannot be read or does not have the expected shape."""


class RenderError(SvgAgentError):
    """The SVG could not be rendered safely; the message is the reason."""


class StoreError(SvgAgentError):
    """The run store is missing, locked or corrupt, or a run id is unknown."""
