"""URLs that differ only in their path (a rollout server's: the rollout's ids are in the path) are read once per
origin by the server's URL check, and read exactly as urlsplit reads them."""

from __future__ import annotations

from typing import Any

import pytest

from svgagent.core.serve import security
from svgagent.core.serve.security import check_http_url, url_host
from svgagent.core.urls import split_origin

TRICKY = [
    "http://127.0.0.1:4000/rollout_id/r-1/row_id/row_0",
    "http://127.0.0.1:4000",
    "https://api.example.com",
    "https://api.example.com/",
    "https://user:pw@api.example.com:8443/v1/chat",
    "http://[::1]:9/v1",
    "http://[::1/v1",
    "http://host:99999/v1",
    "http://host:x/v1",
    "http:///v1",
    "HTTP://Host.Example.com/v1",
    "https://api.example.com/v1?x=1",
    "https://api.example.com/v1#frag",
    "https://api.example.com/v1?",
    "http://example.com/v1 HTTP/1.1\r\nX: y",
    "http://example.com/v\t1",
    " http://example.com/v1",
    "http://example.com/caf\u00e9",
    "http://ex\u00e4mple.com/v1",
    "http://example.com/a\u00a0b",
    "ftp://example.com/v1",
    "http://example.com\\@evil.com/v1",
    "http://a@b@example.com/v1",
]


def _outcome(fn: Any, url: str) -> Any:
    try:
        return fn(url)
    except ValueError as err:
        return ("ValueError", str(err))


def test_split_origin_cuts_only_urls_urlsplit_reads_unchanged() -> None:
    assert split_origin("http://127.0.0.1:4000/rollout_id/r-1") == ("http://127.0.0.1:4000", "/rollout_id/r-1")
    assert split_origin("https://api.example.com") == ("https://api.example.com", "")
    for odd in (
        "HTTP://x/y",
        "http://x/y?q",
        "http://x/y#f",
        "http://x/y z",
        "http://x/\u00e9",
        "ftp://x/y",
        "http://x/\ty",
        " http://x/y",
    ):
        assert split_origin(odd) is None, odd


@pytest.mark.parametrize("url", TRICKY)
def test_a_url_of_a_known_origin_is_read_as_urlsplit_reads_it(url: str) -> None:
    """Primed with the same origin and another path first, check_http_url and url_host answer what reading the
    whole URL with urlsplit answers (the value, or the same error)."""
    split = split_origin(url)
    if split is not None:  # remember the origin from another URL first
        check_http_url(split[0] + "/another/path")
        url_host(split[0] + "/another/path")
    assert check_http_url(url) == security._problem(url)
    assert url_host(url) == security._host.__wrapped__(url)
