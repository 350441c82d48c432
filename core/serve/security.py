"""Which key may go where: the rule that keeps the server's own keys away from URLs a request names.

A request to ``/init`` names the URL to call (``model_base_url``) and may carry the key to call it with
(``api_key``). The server sends the request's key to the request's URLs (the policy through the tracing proxy, and
the gateway's ``/logs``, which is where eval-protocol reads the status back with the same key). The server's own
``FIREWORKS_API_KEY`` is attached only to a host on the allowlist — by default the Fireworks tracing and API
hosts; ``--allow-host`` adds more. Anything else gets no Authorization header at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import urlsplit

from svgagent.core.urls import split_origin

DEFAULT_ALLOWED_HOSTS: tuple[str, ...] = ("tracing.fireworks.ai", "api.fireworks.ai")
_SPACE_OR_CONTROL = re.compile(r"[\s\x00-\x1f\x7f]")


def url_host(url: str) -> str:
    """The lower-cased host of ``url`` ('' when it has none)."""
    split = split_origin(url)
    return _host(split[0] if split else url)


@lru_cache(maxsize=256)
def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def check_http_url(url: str) -> str | None:
    """Why ``url`` cannot be called (None when it is an http(s) URL with a host and nothing odd in it). A URL
    :func:`split_origin` cuts has no query, fragment, space or control character: its origin decides, checked
    once (each rollout's URL differs from the last only in its path)."""
    split = split_origin(url)
    return _origin_problem(split[0]) if split else _problem(url)


@lru_cache(maxsize=256)
def _origin_problem(origin: str) -> str | None:
    return _problem(origin)


def _problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return "is not a valid URL"
    if parts.scheme not in ("http", "https"):
        return "must be an http:// or https:// URL"
    if not parts.hostname:
        return "has no host"
    if parts.username or parts.password:
        return "must not carry credentials"
    if parts.query or parts.fragment:
        return "must not have a query or fragment"
    if _SPACE_OR_CONTROL.search(url):
        return "must not contain spaces or control characters"
    return None


@dataclass(frozen=True)
class KeyPolicy:
    """``own_key``: the server's FIREWORKS_API_KEY (or None); ``allowed_hosts``: where it may be sent.
    A host entry matches that host exactly; an entry starting with a dot (``.fireworks.ai``) matches subdomains."""

    own_key: str | None = None
    allowed_hosts: tuple[str, ...] = DEFAULT_ALLOWED_HOSTS
    _exact: frozenset[str] = field(init=False, repr=False, compare=False)
    _suffixes: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        hosts = [h.strip().lower() for h in self.allowed_hosts if h.strip()]
        object.__setattr__(self, "_exact", frozenset(h for h in hosts if not h.startswith(".")))
        object.__setattr__(self, "_suffixes", tuple(h for h in hosts if h.startswith(".")))

    @classmethod
    def build(cls, own_key: str | None, extra_hosts: Iterable[str] = (), *, defaults: bool = True) -> KeyPolicy:
        hosts = (*(DEFAULT_ALLOWED_HOSTS if defaults else ()), *extra_hosts)
        return cls(own_key=own_key or None, allowed_hosts=tuple(dict.fromkeys(hosts)))

    def allows(self, url: str) -> bool:
        host = url_host(url)
        return bool(host) and (host in self._exact or host.endswith(self._suffixes))

    def key_for(self, url: str, request_key: str | None) -> str | None:
        """The key to call ``url`` with: the request's own, else the server's when ``url``'s host is allowed."""
        if request_key:
            return request_key
        if self.own_key and self.allows(url):
            return self.own_key
        return None
