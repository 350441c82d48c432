"""What the engine's per-rollout work was cut to (issue 13), checked for what it sends and stores, not for speed
(bench/engine.py measures that): the policy request built once per dataset row, the PNG stored once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from svgagent.core import engine as engine_module
from svgagent.core.chat_http import ChatClient
from svgagent.core.dataset import load_dataset
from svgagent.core.demo import demo_overrides
from svgagent.core.engine import Engine
from svgagent.core.prompt import format_prompt
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.scoring.render import Renderer
from svgagent.core.settings import load_settings
from svgagent.core.sim.simulator import Simulator
from svgagent.core.store import Store
from svgagent.core.store_batch import RolloutWriter


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    with Renderer(size=128, workers=1) as r:
        yield r


class RecordingClient(ChatClient):
    """The engine's own client, keeping every body it sends."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bodies: list[bytes] = []

    async def complete_chat_json(self, data: bytes) -> Any:
        self.bodies.append(data)
        return await super().complete_chat_json(data)


def settings_for(url: str, tmp_path: Path, **overrides: Any):
    return load_settings(**{**demo_overrides(url), "store": tmp_path / "runs.db", "render_size": 128,
                            "max_retries": 0, "request_timeout_s": 10, **overrides})


async def test_every_sample_of_a_row_sends_the_request_built_once_for_the_row(tmp_path: Path, renderer: Renderer,
                                                                               monkeypatch) -> None:
    builds: list[str] = []
    real = engine_module.request_json

    def counted(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> bytes:
        builds.append(messages[0]["content"])
        return real(model, messages, params)

    monkeypatch.setattr(engine_module, "request_json", counted)
    with Simulator() as sim:
        settings = settings_for(sim.base_url, tmp_path, rows=3, samples=3, temperature=0.7, max_tokens=900)
        policy = RecordingClient(sim.base_url, "k")
        with Store(settings.store_path()) as store:
            async with Engine(settings, store, renderer=renderer, policy=policy) as engine:
                run_id = engine.create_run(load_dataset("builtin"))
                await engine.run(run_id)
            rollouts = store.list_rollouts(run_id)
            await policy.close()
    assert len(rollouts) == 9 and all(r.status.terminal for r in rollouts)
    assert len(builds) == 3 and len(set(builds)) == 3  # one build per row, not per sample
    assert len(policy.bodies) == 9
    expected = {}
    for r in rollouts:
        expected[r.row_index] = {"model": settings.model,
                                 "messages": [{"role": "user", "content": format_prompt(r.prompt, r.requirements)}],
                                 "temperature": 0.7, "max_tokens": 900}
    sent = [json.loads(body) for body in policy.bodies]
    # each body is the request of one row, as the openai-shaped dict path serialises it, and every row was asked
    assert sorted(map(json.dumps, sent)) == sorted(json.dumps(expected[r.row_index]) for r in rollouts)


async def test_the_png_is_stored_once_with_the_rollouts_end(tmp_path: Path, renderer: Renderer, monkeypatch) -> None:
    """``judging`` is stored without the PNG (SQLite rewrites a whole row per UPDATE: a PNG stored a state early
    was written twice); the verdict carries it, and so does a judge failure, so the picture is never lost."""
    changes: list[tuple[str, dict[str, Any]]] = []
    real_submit = RolloutWriter.submit

    def submit(self: RolloutWriter, rollout_id: str, fields: dict[str, Any], **kwargs: Any) -> None:
        changes.append((rollout_id, fields))
        real_submit(self, rollout_id, fields, **kwargs)

    monkeypatch.setattr(RolloutWriter, "submit", submit)
    with Simulator() as sim:
        settings = settings_for(sim.base_url, tmp_path, rows=4, samples=1)
        with Store(settings.store_path()) as store:
            async with Engine(settings, store, renderer=renderer) as engine:
                judged = engine.create_run(load_dataset("builtin"))
                await engine.run(judged)
            # the judge unreachable: its failure still keeps the picture the rollout drew
            unreachable = ChatClient("http://127.0.0.1:9/v1", "k", max_retries=0)
            async with Engine(settings, store, renderer=renderer, judge=unreachable) as engine:
                failed = engine.create_run(load_dataset("builtin"))
                await engine.run(failed)
            await unreachable.close()
            judged_rows = store.list_rollouts(judged, heavy=True)
            failed_rows = store.list_rollouts(failed, heavy=True)
    judging = [fields for _, fields in changes if fields["status"] is RolloutStatus.JUDGING]
    assert judging and all("png" not in fields for fields in judging)
    assert all(fields["render_s"] > 0 for fields in judging)
    with_png = [fields["status"] for _, fields in changes if "png" in fields]
    assert with_png and set(with_png) <= {RolloutStatus.SCORED, RolloutStatus.FAILED}
    scored = [r for r in judged_rows if r.status is RolloutStatus.SCORED]
    assert scored and all(r.png is not None and r.png.startswith(b"\x89PNG") for r in scored)
    judge_failures = [r for r in failed_rows if r.failure_kind is not None and r.failure_kind.value == "unreachable"]
    assert judge_failures and all(not r.is_score_valid for r in judge_failures)
    assert all(r.png is not None and r.png.startswith(b"\x89PNG") for r in judge_failures)
