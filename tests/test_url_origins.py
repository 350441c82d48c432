"""URLs that differ only in their path (a rollout server's: the rollout's ids are in the path) are read once per
origin — by the HTTP client (Target.parse, Target.head) and by the server's URL check — and read exactly as
urlsplit reads them."""

from __future__ import annotations

from typing import Any

import pytest

from svgagent.core import http1
from svgagent.core.http1 import Target
from svgagent.core.serve import security
from svgagent.core.serve.policy_call import json_post
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
    """Primed with the same origin and another path first, Target.parse, check_http_url and url_host answer
    what reading the whole URL with urlsplit answers (the value, or the same error)."""
    split = split_origin(url)
    if split is not None:  # remember the origin from another URL first
        _outcome(Target.parse, split[0] + "/another/path")
        check_http_url(split[0] + "/another/path")
    assert _outcome(Target.parse, url) == _outcome(Target._read, url)
    assert check_http_url(url) == security._problem(url)
    assert url_host(url) == security._host.__wrapped__(url)


def test_urls_that_differ_in_their_path_are_read_and_their_heads_written_once_per_origin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = {"urlsplit": 0, "fields": 0}
    real_split, real_fields = http1.urlsplit, http1._fields

    def counting_split(url: str) -> Any:
        calls["urlsplit"] += 1
        return real_split(url)

    def counting_fields(authority: str, headers: dict[str, str]) -> bytes:
        calls["fields"] += 1
        return real_fields(authority, headers)

    monkeypatch.setattr(http1, "urlsplit", counting_split)
    monkeypatch.setattr(http1, "_fields", counting_fields)
    monkeypatch.setattr(http1, "_ORIGINS", {})
    monkeypatch.setattr(http1, "_FIELDS", {})
    heads = []
    for n in range(3):
        target, head = json_post(f"http://127.0.0.1:4000/rollout_id/r-{n}/row_id/row_0/chat/completions", "k")
        assert target.path == f"/rollout_id/r-{n}/row_id/row_0/chat/completions"
        heads.append(head)
    assert calls == {"urlsplit": 1, "fields": 1}
    assert heads[2] == (
        b"POST /rollout_id/r-2/row_id/row_0/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:4000\r\n"
        b"Accept-Encoding: gzip, deflate\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer k\r\nContent-Length: "
    )
    json_post("http://127.0.0.1:4000/rollout_id/r-9/chat/completions", "another-key")  # another key: its own fields
    assert calls == {"urlsplit": 1, "fields": 2}
    with pytest.raises(ValueError, match="cannot be sent"):  # a refused value is refused every time, never kept
        json_post("http://127.0.0.1:4000/x", "bad\r\nX-Evil: 1")
    with pytest.raises(ValueError, match="cannot be sent"):
        json_post("http://127.0.0.1:4000/y", "bad\r\nX-Evil: 1")
