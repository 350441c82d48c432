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


class StoreOutdated(StoreError):
    """The store file has an older schema and was opened read-only (a writing open upgrades it)."""


class StoreDamaged(StoreError):
    """The run store file is corrupt (SQLite says malformed / not a database)."""


class StoreWriteError(StoreError):
    """The run store could not be written: disk full, read-only file system, I/O error. Never a data verdict."""


class RunBusy(StoreError):
    """Another live process holds the run's lease (it is working on that run)."""


class EndpointResponseError(SvgAgentError):
    """An endpoint answered with something that is not a chat completion (an SSE stream, invalid UTF-8, a body
    of the wrong shape). An infrastructure fault, not a model's answer."""
