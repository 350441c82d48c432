"""Dollars: the price table, the budget that stops a run before a call would pass it (and the resume that
continues it), and `eval --dry-run` — with the project's simulator as policy and judge."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_process import svgagent_argv

from svgagent.core.config.prices import Price, price_table, rollout_cost, rollouts_cost, usd_text
from svgagent.core.config.settings import Settings, load_settings
from svgagent.core.demo import demo_overrides
from svgagent.core.run.budget import BudgetGate, BudgetReached
from svgagent.core.run.dataset import load_dataset
from svgagent.core.run.engine import Engine
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.scoring.render import Renderer
from svgagent.core.sim.simulator import Simulator
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RolloutRecord


def test_price_table_lookup_and_overrides() -> None:
    table = price_table({"accounts/me/models/*": {"input": 1.0, "output": 2.0}, "gpt-4.1": {"output": 9.0}})
    assert table.price_of("accounts/me/models/my-lora") == Price(1.0, 2.0)
    gpt = table.price_of("gpt-4.1")
    assert gpt is not None and gpt.output == 9.0 and gpt.input == 2.0  # a partial override keeps the rest
    assert table.price_of("no-such-model") is None
    mine = price_table({"accounts/fireworks/models/*": {"input": 5.0, "output": 5.0}})
    assert mine.price_of("accounts/fireworks/models/qwen3-8b") == Price(5.0, 5.0)  # yours before the shipped name
    # 1M fresh input at $2, 1M cached at $0.5, 0.5M output at $9, 2 pictures at $0 → dollars by hand
    assert gpt.call_usd(2_000_000, 500_000, cached_tokens=1_000_000, images=2) == pytest.approx(2.0 + 0.5 + 4.5)


@pytest.mark.parametrize(
    ("prices", "needle"),
    [
        ({"m": {"input": 1.0}}, "needs input and output"),
        ({"gpt-4.1": {"inptu": 1.0}}, "unknown price field 'inptu'"),
        ({"m": {"input": -1.0, "output": 1.0}}, "must be a number of dollars"),
    ],
)
def test_a_bad_price_override_is_refused_with_what_is_wrong(prices: dict, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        Settings(prices=prices)


def test_rollout_cost_policy_and_judge_apart_and_cached_answers_cost_nothing() -> None:
    table = price_table({"p": {"input": 1.0, "output": 3.0}, "j": {"input": 2.0, "output": 4.0, "image": 0.5}})
    rec = RolloutRecord(
        "r", "run", 0, "row_0", 0, RolloutStatus.SCORED, "p", ["a"], 1,
        prompt_tokens=1000, completion_tokens=2000, judge_prompt_tokens=500, judge_completion_tokens=100,
    )  # fmt: skip
    cost = rollout_cost(rec, table, "p", "j")
    assert cost.policy_usd == pytest.approx((1000 * 1 + 2000 * 3) / 1e6)
    assert cost.judge_usd == pytest.approx((500 * 2 + 100 * 4) / 1e6 + 0.5)
    assert (cost.policy_tokens, cost.judge_tokens) == (3000, 600)
    rec.cached = True
    assert rollout_cost(rec, table, "p", "j").policy_usd == 0.0
    rec.cached = False
    assert rollouts_cost([rec], table, "unknown", "j").total_usd is None  # a part is not the total
    rec.prompt_tokens = rec.completion_tokens = None  # no policy call recorded: nothing to pay, price or not
    assert rollouts_cost([rec], table, "unknown", "j").policy_usd == 0.0


def test_the_gate_reserves_a_rollouts_judge_call_with_its_policy_call() -> None:
    gate = BudgetGate(1.0, spent=0.2, policy_call_usd=0.1, judge_call_usd=0.2)
    assert gate.admit_rollout("a") and gate.admit_rollout("b")  # 0.2 + 2 × 0.3 = 0.8
    assert not gate.admit_rollout("c")  # 0.8 + 0.3 > 1.0: stopped for good
    assert gate.stopped and not gate.admit_rollout("d")
    assert gate.admit_judge("a")  # reserved with its policy call: a started rollout finishes
    gate.settle("policy", 0.1)
    gate.settle("judge", 0.2, "a")
    assert gate.spent == pytest.approx(0.5)
    assert BudgetGate(None, 0, 1, 1).admit_rollout("x")  # no budget: everything goes


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    with Renderer(size=256, workers=2) as r:
        yield r


async def test_the_budget_stops_the_run_before_a_call_and_a_resume_finishes_it(
    tmp_path: Path, renderer: Renderer
) -> None:
    with Simulator() as sim:
        base = {**demo_overrides(sim.base_url), "store": tmp_path / "runs.db", "render_size": 256, "rows": 12}
        budget = 0.012  # the demo judge is priced as gpt-4.1: a few rollouts' worth
        settings = load_settings(**base, budget=budget, concurrency=4, judge_concurrency=4)
        store = Store(settings.store_path())
        table = price_table()
        async with Engine(settings, store, renderer=renderer) as engine:
            run_id = engine.create_run(load_dataset("builtin"))
            with pytest.raises(BudgetReached) as stop:
                await engine.run(run_id)
        assert stop.value.run_id == run_id and "budget reached" in str(stop.value)
        assert store.get_run(run_id).status == "interrupted"
        rollouts = store.list_rollouts(run_id)
        done = [r for r in rollouts if r.status.terminal]
        left = [r for r in rollouts if not r.status.terminal]
        assert done and left, "some rollouts ran, the rest wait for the resume"
        assert all(r.status is RolloutStatus.QUEUED for r in left)
        spent = rollouts_cost(rollouts, table, settings.model, settings.judge_model).total_usd
        assert spent is not None and 0 < spent <= budget
        policy_calls = sim.stats()["requests"]["policy"]
        assert policy_calls == sum(1 for r in rollouts if r.raw_answer is not None or r.status.terminal)

        resumed = load_settings(**base)  # no budget: it runs to the end
        async with Engine(resumed, store, renderer=renderer) as engine:
            summary = await engine.run(run_id)
        assert summary.done == 12 and store.get_run(run_id).status == "completed"
        # every rollout was generated once: nothing paid for before the stop was asked again
        assert sim.stats()["requests"]["policy"] == 12
        store.close()


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SVGAGENT_HOME": str(home), "XDG_CONFIG_HOME": str(home / "config")}
    return subprocess.run(svgagent_argv(*args), capture_output=True, text=True, timeout=180, env=env)


def test_eval_budget_stops_with_one_line_and_resume_continues(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stopped = _cli(home, "eval", "--demo", "--rows", "8", "--budget", "0.01", "--concurrency", "2", "--json")
    assert stopped.returncode == 4, stopped.stderr
    said = json.loads(stopped.stdout)
    assert said["budget_reached"] is True and 0 < said["spent_usd"] <= said["budget_usd"] == 0.01
    lines = [line for line in stopped.stderr.splitlines() if "budget reached" in line]
    assert len(lines) == 1 and "--resume" in lines[0]
    run_id = lines[0].split("budget reached: run ")[1].split()[0]
    listed = json.loads(_cli(home, "runs", "list", "--json").stdout)
    assert listed[0]["run_id"] == run_id and listed[0]["status"] == "interrupted"
    assert listed[0]["done"] < 8
    left = _cli(home, "eval", "--demo", "--resume", run_id, "--dry-run", "--json")
    assert json.loads(left.stdout)["rollouts"] == 8 - listed[0]["done"]  # what the resume would still pay for
    more = _cli(home, "eval", "--demo", "--resume", run_id, "--json")
    assert more.returncode in (0, 1, 3), more.stderr
    data = json.loads(more.stdout)
    assert data["run_id"] == run_id and data["rollouts"] == 8 and data["scored"] + data["failed"] == 8
    assert data["cost"]["total_usd"] > 0.0
    assert data["cost"]["judge_usd"] > data["cost"]["policy_usd"] > 0.0
    relisted = json.loads(_cli(home, "runs", "list", "--json").stdout)  # each run's dollars, every attempt
    assert relisted[0]["cost"] == pytest.approx(data["cost"])
    table = _cli(home, "runs", "list").stdout
    assert usd_text(data["cost"]["total_usd"]) in table


def test_dry_run_prints_the_estimate_and_calls_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    out = _cli(home, "eval", "--demo", "--rows", "5", "--samples", "3", "--dry-run", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["dry_run"] is True and data["rollouts"] == 15
    table = price_table()
    policy = table.price_of("accounts/fireworks/models/qwen3-0p6b")
    judge = table.price_of("simulated-judge")
    assert policy is not None and judge is not None
    p, j = data["policy_tokens_per_call"], data["judge_tokens_per_call"]
    assert data["judge_usd"] == pytest.approx(15 * judge.call_usd(round(j["prompt"]), round(j["completion"]), images=1))
    assert data["policy_usd"] == pytest.approx(15 * policy.call_usd(round(p["prompt"]), round(p["completion"])))
    assert not (home / "runs.db").exists()  # nothing written, nothing called
    text = _cli(home, "eval", "--demo", "--rows", "5", "--dry-run", "--budget", "0.001")
    assert "dry run: 5 rows × 1 samples = 5 rollouts" in text.stdout
    assert "over the budget of $0.0010" in text.stdout


def test_a_runs_cost_from_its_grouped_tokens_is_the_sum_over_every_attempt(tmp_path: Path) -> None:
    """``run_cost`` (one grouped query: ``runs list``, ``runs show``) prices a run as the sum of ``rollout_cost``
    over every attempt: cached answers, calls not recorded, unknown prices and reruns' replaced attempts alike."""
    from svgagent.core.config.prices import run_cost
    from svgagent.core.scoring.models import DatasetRow

    rows = [DatasetRow(i, f"row_{i}", f"Draw {i}.", ("red", "round")) for i in range(6)]
    with Store(tmp_path / "runs.db") as store:
        run_id = store.create_run(name="t", settings={}, dataset={"name": "t", "rows": 6}, rows=rows, samples=1)
        ids = [r.rollout_id for r in store.list_rollouts(run_id)]
        tokens = [  # prompt, completion, judge prompt, judge completion, cached
            (1000, 2000, 500, 100, 0),
            (1200, 1800, 520, 90, 1),  # the policy's answer from the response cache: judged, policy unpaid
            (None, None, None, None, 0),  # no call recorded
            (900, 2100, None, None, 0),  # generated, never judged
            (1100, 0, 480, 120, 0),
            (1000, 2500, 510, 110, 0),
        ]
        with store._tx() as db:
            db.executemany(
                "UPDATE rollouts SET prompt_tokens=?, completion_tokens=?, judge_prompt_tokens=?,"
                " judge_completion_tokens=?, cached=? WHERE rollout_id=?",
                [(*t, rid) for t, rid in zip(tokens, ids, strict=True)],
            )
        with store._tx() as db:  # some of the prompts served from the provider's prompt cache
            db.execute(
                "UPDATE rollouts SET cached_prompt_tokens=512, judge_cached_prompt_tokens=128 WHERE rollout_id=?",
                (ids[0],),
            )
            db.execute("UPDATE rollouts SET cached_prompt_tokens=256 WHERE rollout_id=?", (ids[5],))
        rerun = store.new_attempts(run_id, ids[:2])  # the first two again: the replaced attempts were paid
        with store._tx() as db:
            db.executemany(
                "UPDATE rollouts SET prompt_tokens=700, completion_tokens=800, judge_prompt_tokens=300,"
                " judge_completion_tokens=50 WHERE rollout_id=?",
                [(rid,) for rid in rerun],
            )
        attempts = store.list_rollouts(run_id, current_only=False)
        assert len(attempts) == 8
        table = price_table({"p": {"input": 1.0, "output": 3.0}, "j": {"input": 2.0, "output": 4.0, "image": 0.5}})
        cheaper = price_table(
            {
                "p": {"input": 1.0, "cached_input": 0.1, "output": 3.0},
                "j": {"input": 2.0, "output": 4.0, "cached_input": 0.2},
            }
        )
        for policy, judge, prices in [
            ("p", "j", table),
            ("unknown", "j", table),
            ("p", "unknown", table),
            ("p", "j", cheaper),
        ]:
            want = rollouts_cost(attempts, prices, policy, judge)
            got = run_cost(store, run_id, prices, policy, judge)
            assert (got.policy_tokens, got.judge_tokens) == (want.policy_tokens, want.judge_tokens)
            for side in ("policy_usd", "judge_usd", "total_usd"):
                assert getattr(got, side) == pytest.approx(getattr(want, side)), (policy, judge, side)
        known = run_cost(store, run_id, table, "p", "j")
        # the judge: six calls, each with its picture; the policy: five calls paid (one cached, one not made)
        assert known.judge_usd == pytest.approx((2610 * 2 + 520 * 4) / 1e6 + 6 * 0.5)
        assert known.policy_usd == pytest.approx(
            ((1000 + 900 + 1100 + 1000 + 1400) + (2000 + 2100 + 2500 + 1600) * 3) / 1e6
        )


async def test_the_providers_prompt_cache_is_stored_and_priced_at_the_cached_rate(
    tmp_path: Path, renderer: Renderer
) -> None:
    """``usage.prompt_tokens_details.cached_tokens`` (the part of a prompt the provider's cache served) is kept with
    each call, policy and judge apart, and priced at the table's cached-input rate — it was priced as fresh input.
    The simulator caches as OpenAI does: prompts of 1,024 tokens or more, in blocks; rows sharing a long preamble."""
    from svgagent.core.config.prices import run_cost

    preamble = "You draw for a museum catalogue. " * 160  # ~5,300 characters, the same in every prompt
    rows = [
        {"prompt": f"{preamble}Draw shape {i}.", "requirements": ["a red circle", "a blue square"]} for i in range(4)
    ]
    (tmp_path / "questions.json").write_text(json.dumps(rows))
    with Simulator() as sim:
        settings = load_settings(
            **demo_overrides(sim.base_url), store=tmp_path / "runs.db", render_size=128, concurrency=1,
            dataset=str(tmp_path / "questions.json"),
        )  # fmt: skip
        store = Store(settings.store_path())
        async with Engine(settings, store, renderer=renderer) as engine:
            run_id = engine.create_run(load_dataset(settings.dataset))
            await engine.run(run_id)
    rollouts = sorted(store.list_rollouts(run_id), key=lambda r: r.row_index)
    assert all(r.status is RolloutStatus.SCORED for r in rollouts)
    # the first call each side served found nothing cached; every later one the preamble's blocks, never all of it
    assert [r.cached_prompt_tokens for r in rollouts].count(0) == 1
    assert [r.judge_cached_prompt_tokens for r in rollouts].count(0) == 1
    for rec in rollouts:
        assert 0 <= rec.cached_prompt_tokens < rec.prompt_tokens and rec.cached_prompt_tokens % 128 == 0
        assert 0 <= rec.judge_cached_prompt_tokens < rec.judge_prompt_tokens
    table = price_table(
        {
            "p": {"input": 1.0, "cached_input": 0.25, "output": 3.0},
            "j": {"input": 2.0, "cached_input": 0.5, "output": 8.0, "image": 0.0},
        }
    )
    cost = run_cost(store, run_id, table, "p", "j")
    fresh = sum(r.prompt_tokens - r.cached_prompt_tokens for r in rollouts)
    cached = sum(r.cached_prompt_tokens for r in rollouts)
    out = sum(r.completion_tokens for r in rollouts)
    assert cost.policy_usd == pytest.approx((fresh * 1.0 + cached * 0.25 + out * 3.0) / 1e6)
    assert (
        cost.policy_usd
        < rollouts_cost(rollouts, price_table({"p": {"input": 1.0, "output": 3.0}}), "p", "j").policy_usd
    )
    judge_fresh = sum(r.judge_prompt_tokens - r.judge_cached_prompt_tokens for r in rollouts)
    judge_cached = sum(r.judge_cached_prompt_tokens for r in rollouts)
    judge_out = sum(r.judge_completion_tokens for r in rollouts)
    assert cost.judge_usd == pytest.approx((judge_fresh * 2.0 + judge_cached * 0.5 + judge_out * 8.0) / 1e6)
    assert rollouts_cost(rollouts, table, "p", "j").total_usd == pytest.approx(cost.total_usd)
    store.close()
