"""Proxies from the environment, as a user behind a corporate proxy has them: HTTP_PROXY / HTTPS_PROXY carry the
policy and judge calls (forwarded, or tunnelled with CONNECT for https), NO_PROXY is honoured, and loopback
endpoints (the demo's simulators, a local model server) are called directly. The proxy is tests/loopback_servers'
ForwardProxy on 127.0.0.1; a host name only it knows (policy.test) shows a call could only have gone through it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_process import svgagent_argv
from loopback_servers import ForwardProxy, ScriptedEndpoint

from svgagent.core.config.settings import load_settings
from svgagent.core.run.dataset import load_dataset
from svgagent.core.run.engine import Engine
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.scoring.render import Renderer
from svgagent.core.sim.simulator import Simulator
from svgagent.core.store.run_store import Store

POLICY_CALL = "POST http://policy.test/v1/chat/completions HTTP/1.1"


@pytest.fixture(scope="module")
def renderer() -> Iterator[Renderer]:
    with Renderer(size=128, workers=1) as r:
        yield r


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIREWORKS_API_KEY", "fw-proxy")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proxy")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


def _settings(policy_url: str, judge_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    return load_settings(
        base_url=policy_url,
        judge_base_url=judge_url,
        model="simulated-policy",
        judge_model="simulated-judge",
        store=tmp_path / "runs.db",
        render_size=128,
        rows=2,
        max_retries=0,
        request_timeout_s=20,
    )


async def _eval(settings, renderer: Renderer) -> list:  # type: ignore[no-untyped-def]
    with Store(settings.store_path()) as store:
        async with Engine(settings, store, renderer=renderer) as engine:
            run_id = engine.create_run(load_dataset("builtin"))
            await engine.run(run_id)
        return store.list_rollouts(run_id)


def test_svgagent_eval_goes_through_the_http_proxy_and_loopback_does_not(tmp_path: Path, keys: None) -> None:
    """The policy at http://policy.test (a name only the proxy resolves: to the simulator) through HTTP_PROXY;
    the judge on 127.0.0.1 called directly."""
    with Simulator() as sim:
        assert sim.base_url is not None
        port = int(sim.base_url.rsplit(":", 1)[1].split("/")[0])
        with ForwardProxy({"policy.test:80": ("127.0.0.1", port)}) as proxy:
            out = subprocess.run(
                svgagent_argv(
                    *("eval", "--base-url", "http://policy.test/v1", "--judge-base-url", sim.base_url),
                    *("--model", "simulated-policy", "--judge-model", "simulated-judge", "--rows", "2"),
                    *(
                        "--render-size",
                        "128",
                        "--max-retries",
                        "0",
                        "--threshold",
                        "0",
                        "--store",
                        str(tmp_path / "runs.db"),
                    ),
                ),
                capture_output=True,
                text=True,
                timeout=180,
                env={**os.environ, "HTTP_PROXY": proxy.url},
            )
            seen = list(proxy.seen)
        stats = sim.stats()
    assert out.returncode == 0, out.stderr[-2000:]
    assert seen == [POLICY_CALL, POLICY_CALL]  # both policy calls, and nothing of the judge's
    assert stats["requests"]["policy"] == 2 and stats["requests"]["judge"] == 2


@pytest.mark.parametrize("no_proxy", ["", "127.0.0.2", "localhost,127.0.0.2"])
async def test_no_proxy_is_honoured(
    tmp_path: Path, renderer: Renderer, keys: None, monkeypatch: pytest.MonkeyPatch, no_proxy: str
) -> None:
    """An endpoint on 127.0.0.2 (loopback, but not a name svgagent calls directly by itself) goes through the
    proxy unless NO_PROXY names it."""
    sim = Simulator()
    url = sim.start(host="127.0.0.2")
    try:
        with ForwardProxy() as proxy:
            monkeypatch.setenv("HTTP_PROXY", proxy.url)
            if no_proxy:
                monkeypatch.setenv("NO_PROXY", no_proxy)
            rollouts = await _eval(_settings(url, url, tmp_path), renderer)
            seen = list(proxy.seen)
    finally:
        sim.stop()
    assert [r.status for r in rollouts] == [RolloutStatus.SCORED] * 2, [r.reason for r in rollouts]
    if no_proxy:
        assert seen == []
    else:
        assert len(seen) == 4 and all(line.startswith("POST http://127.0.0.2:") for line in seen)


def _certificate(tmp_path: Path, host: str) -> tuple[Path, Path]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", f"/CN={host}", "-addext", f"subjectAltName=DNS:{host}"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_https_goes_through_https_proxy_with_connect(
    tmp_path: Path, renderer: Renderer, keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An https policy endpoint through HTTPS_PROXY: a CONNECT tunnel, TLS end to end (the certificate for
    policy.test verified against SSL_CERT_FILE, as a corporate CA would be)."""
    import ssl

    cert, key = _certificate(tmp_path, "policy.test")
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    with ScriptedEndpoint(tls=tls) as policy, Simulator() as judge:
        with ForwardProxy({"policy.test:443": ("127.0.0.1", policy.port)}) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", proxy.url)
            monkeypatch.setenv("SSL_CERT_FILE", str(cert))
            assert judge.base_url is not None
            rollouts = await _eval(_settings("https://policy.test/ok/v1", judge.base_url, tmp_path), renderer)
            seen = list(proxy.seen)
    assert [r.status for r in rollouts] == [RolloutStatus.SCORED] * 2, [r.reason for r in rollouts]
    assert policy.requests["ok"] == 2
    assert seen and all(line == "CONNECT policy.test:443 HTTP/1.1" for line in seen)
