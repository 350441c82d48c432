"""Small, careful readings of endpoint URLs: their host (for trust decisions) and their credentials (never shown)."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit, urlunsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}
_NOT_PLAIN = re.compile(r"[\x00-\x20\x7f?#]")


def split_origin(url: str) -> tuple[str, str] | None:
    """``url`` as ``scheme://authority`` and the rest (its path, from the first ``/``; ``""`` when it has none)
    when that is how urlsplit reads it, unchanged: ``http://`` or ``https://`` in lower case, ASCII, no query,
    fragment, whitespace or control character. None: read it with urlsplit. For readers that remember what they
    read of an origin — the URLs a rollout server calls differ per request only in their path (the rollout's ids)."""
    if not url.startswith(("http://", "https://")) or not url.isascii() or _NOT_PLAIN.search(url):
        return None
    cut = url.find("/", url.index("//") + 2)
    return (url, "") if cut < 0 else (url[:cut], url[cut:])


def has_userinfo(url: str) -> bool:
    """Whether ``url`` carries ``user[:password]@`` before its host."""
    try:
        return "@" in (urlsplit(url).netloc or "")
    except ValueError:
        return False


def strip_userinfo(url: str) -> str:
    """``url`` without ``user[:password]@`` (everything else as it was)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[1], parts.path, parts.query, parts.fragment))


def endpoint_host(url: str) -> str:
    """``host:port`` of ``url`` (lower-case host, the scheme's default port when none is given) — what a key is
    sent to."""
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower(), 0)
    except ValueError:
        return url
    return f"{(parts.hostname or '').lower()}:{port}"


def is_loopback_host(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1); a name that is not an address is not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
