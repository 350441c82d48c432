"""Key checks against real local servers on 127.0.0.1, through the real openai / fireworks-ai clients."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from apps.settings_panes import FAKE_ACCOUNT as ACCOUNT
from apps.settings_panes import GOOD_FIREWORKS, GOOD_OPENAI, FakeKeyServer, closed_port_url, fake_key_server

from svgagent.core.config.key_checks import VerifyResult, control_plane_url, verify_fireworks_key, verify_openai_key

BAD = "skX-bad-key-that-must-not-leak-99"


@pytest.fixture
async def server() -> AsyncIterator[FakeKeyServer]:
    async with fake_key_server() as running:
        yield running


@pytest.fixture(name="closed_port_url")
def _closed_port_url() -> str:
    return closed_port_url()


async def test_openai_ok(server: FakeKeyServer) -> None:
    result = await verify_openai_key(f"{server.url}/v1", GOOD_OPENAI)
    assert result == VerifyResult("ok", f"OPENAI_API_KEY accepted by {server.url}/v1", None)
    assert result.ok


async def test_openai_ok_uses_given_name(server: FakeKeyServer) -> None:
    result = await verify_openai_key(f"{server.url}/v1/", GOOD_OPENAI, name="FIREWORKS_API_KEY")
    assert result.message == f"FIREWORKS_API_KEY accepted by {server.url}/v1"


async def test_openai_rejected_without_echoing_key(server: FakeKeyServer) -> None:
    result = await verify_openai_key(f"{server.url}/v1", BAD)
    assert result.status == "rejected"
    assert result.message == "rejected (HTTP 401): the key is wrong or revoked"
    assert server.hits["models"] == 1  # a 401 is not retried


async def test_openai_unreachable(closed_port_url: str) -> None:
    result = await verify_openai_key(f"{closed_port_url}/v1", GOOD_OPENAI, timeout=2)
    assert result.status == "unreachable"
    assert result.message == f"unreachable: could not connect to host {closed_port_url.removeprefix('http://')}"


async def test_openai_timeout_is_unreachable(server: FakeKeyServer) -> None:
    result = await verify_openai_key(f"{server.url}/slow", GOOD_OPENAI, timeout=0.2)
    assert result.status == "unreachable"
    assert "no answer" in result.message
    assert "0.2 s" in result.message


async def test_openai_server_error_retried_once_and_scrubbed(server: FakeKeyServer) -> None:
    result = await verify_openai_key(f"{server.url}/broken", BAD)
    assert result.status == "error"
    assert "HTTP 500" in result.message
    assert BAD not in result.message
    assert server.hits["broken"] == 2  # one try + at most one retry


async def test_openai_wrong_path_is_error_with_hint(server: FakeKeyServer) -> None:
    result = await verify_openai_key(server.url, GOOD_OPENAI)
    assert result.status == "error"
    assert "HTTP 404" in result.message
    assert "base URL" in result.message


async def test_openai_missing_key_and_bad_url_need_no_network() -> None:
    assert (await verify_openai_key("https://example.invalid/v1", "")).message == "OPENAI_API_KEY is not set"
    assert (await verify_openai_key("ftp://x", "k")).status == "error"


async def test_fireworks_ok_reports_account(server: FakeKeyServer) -> None:
    result = await verify_fireworks_key(GOOD_FIREWORKS, base_url=server.url)
    assert result.status == "ok"
    assert result.account_id == ACCOUNT
    assert result.message == f"FIREWORKS_API_KEY accepted by {server.url} (account {ACCOUNT})"


async def test_fireworks_base_from_environment(server: FakeKeyServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIREWORKS_BASE_URL", server.url)
    assert control_plane_url() == server.url
    result = await verify_fireworks_key(GOOD_FIREWORKS)
    assert result.ok
    assert server.hits["verify"] == 1


def test_control_plane_default() -> None:
    assert control_plane_url() == "https://api.fireworks.ai"
    assert control_plane_url("http://proxy:8080/") == "http://proxy:8080"


async def test_fireworks_rejected(server: FakeKeyServer) -> None:
    result = await verify_fireworks_key(BAD, base_url=server.url)
    assert result == VerifyResult("rejected", "rejected (HTTP 401): the key is wrong or revoked", None)


async def test_fireworks_unreachable(closed_port_url: str) -> None:
    result = await verify_fireworks_key(GOOD_FIREWORKS, base_url=closed_port_url, timeout=2)
    assert result.status == "unreachable"
    assert result.message.startswith("unreachable: could not connect to host 127.0.0.1:")
