"""The Jobs pane and the RFT launch screen, driven with Pilot against the simulated Fireworks control plane (through
the real fireworks-ai client, on 127.0.0.1) or the in-memory fake; assertions on data: rows, states, the
simulator's request log, the store, the clipboard."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from job_fakes import NOW, fake_source, job, sample_jobs
from textual.widgets import Input
from tui_support import make_app, notifications, plain, settings_for, settle, summary_lines, wait_until

from svgagent.core.rft.demo_identity import DEMO_JOB_ID
from svgagent.core.rft.fireworks_api import ControlPlane
from svgagent.core.rft.job_source import JobSource, JobsPoller
from svgagent.core.rft.launch import seed_demo_job
from svgagent.core.sim.control_plane import FireworksSim
from svgagent.core.store.run_store import Store
from svgagent.screens.confirm import Confirm
from svgagent.screens.help import binding_sections
from svgagent.screens.rft_launch import RftLaunchScreen
from svgagent.tui.widgets import job_panel as job_panel_module
from svgagent.tui.widgets.job_panel import JobPanel
from svgagent.tui.widgets.job_table import JobTable

ACCOUNT = "sim-account"
JOB_NAME = f"accounts/{ACCOUNT}/reinforcementFineTuningJobs/{DEMO_JOB_ID}"
FAST = {"evaluator_poll_s": 0.01, "dataset_poll_s": 0.01}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "runs.db") as s:
        yield s


@pytest.fixture
def sim() -> Iterator[FireworksSim]:
    with FireworksSim(account_id=ACCOUNT, advance="poll") as server:
        yield server


def seeded(sim: FireworksSim) -> FireworksSim:
    with ControlPlane("fw-test-key", base_url=sim.base_url, max_retries=0) as cp:
        seed_demo_job(cp)
    return sim


def advance(sim: FireworksSim, steps: int) -> None:
    """Let the simulated job move on (in poll mode each GET of it is one step), as time does on Fireworks."""
    with ControlPlane("fw-test-key", base_url=sim.base_url, max_retries=0) as cp:
        for _ in range(steps):
            cp.get_job(DEMO_JOB_ID)


def sim_source(sim: FireworksSim, store: Store | None = None) -> JobSource:
    """The pane's source for Fireworks (not demo mode) pointed at the simulator."""
    return JobSource(
        lambda: ControlPlane("fw-test-key", base_url=sim.base_url, max_retries=0),
        label="Fireworks",
        store=store,
        request_overrides=FAST,
    )


def sim_app(store: Store, source: JobSource, **kwargs: Any):  # type: ignore[no-untyped-def]
    settings = settings_for(store.path, max_retries=0, rows=4, **kwargs.pop("settings", {}))
    return make_app(
        store, settings=settings, job_source=source, wall_clock=kwargs.pop("wall_clock", time.time), **kwargs
    )


def panel_of(app) -> JobPanel:  # type: ignore[no-untyped-def]
    return app.dashboard.query_one(JobPanel)


async def mounted_panel(pilot) -> JobPanel:  # type: ignore[no-untyped-def]
    """The pane's panel once mounted: the dashboard mounts it after its first frame is written."""
    for _ in range(1000):
        if pilot.app.dashboard.query(JobPanel):
            return panel_of(pilot.app)
        await pilot.pause()
    raise AssertionError("the Jobs pane never mounted")


def states(app) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {v.job_id: v.phase for v in panel_of(app).views}


async def polled(pilot, panel: JobPanel, count: int) -> None:  # type: ignore[no-untyped-def]
    """Wait until the pane has finished ``count`` polls."""
    await wait_until(pilot, lambda: panel.polls >= count)
    await settle(pilot)


async def poll_now(pilot, panel: JobPanel, *keys: str) -> None:  # type: ignore[no-untyped-def]
    """Press ``keys`` (none: call ``poll()``) and wait for the poll that follows."""
    target = panel.polls + 1
    if keys:
        await pilot.press(*keys)
    else:
        panel.poll()
    await polled(pilot, panel, target)


async def test_pane_lists_simulator_jobs_and_refresh_updates_them(store: Store, sim: FireworksSim) -> None:
    seeded(sim)
    app = sim_app(store, sim_source(sim, store))
    async with app.run_test(size=(120, 40)) as pilot:
        panel = await mounted_panel(pilot)
        await polled(pilot, panel, 1)
        assert states(app) == {DEMO_JOB_ID: "CREATING"}
        table = panel.query_one(JobTable)
        assert table.names == [JOB_NAME]
        assert table.row_text(JOB_NAME)[:3] == ("svgagent demo job", "CREATING", "–")  # its display name
        advance(sim, 5)  # PENDING, VALIDATING, RUNNING (provisioning), then two steps of progress
        await poll_now(pilot, panel, "5", "u")
        view = panel.views[0]
        assert (view.phase, view.percent, view.processed, view.total) == ("RUNNING", 25, 1, 4)
        assert table.row_text(JOB_NAME)[1:3] == ("RUNNING", "25%")
        assert "1 job · updated just now" in plain(panel.query_one("#jobs-status"))
        assert view.links["job"] == f"{sim.base_url}/dashboard/fine-tuning/reinforcement/{DEMO_JOB_ID}"
        lists = [p for p in sim.paths() if p == f"GET /v1/accounts/{ACCOUNT}/reinforcementFineTuningJobs"]
        assert len(lists) == 2
        assert panel._timer is not None  # re-armed after each fetch, never overlapping


async def test_backoff_after_server_errors_keeps_the_last_known_state(store: Store, sim: FireworksSim) -> None:
    seeded(sim)
    offset = [0.0]
    app = sim_app(store, sim_source(sim), wall_clock=lambda: NOW + offset[0])
    async with app.run_test(size=(120, 40)) as pilot:
        panel = await mounted_panel(pilot)
        await polled(pilot, panel, 1)
        assert panel.outcome is not None
        assert panel.outcome.delay == 10.0
        assert panel.outcome.error is None
        sim.inject(503, times=None, route="reinforcementFineTuningJobs")
        delays = []
        for _ in range(4):
            offset[0] += 25
            await poll_now(pilot, panel)
            delays.append(panel.outcome.delay)
        assert delays == [20.0, 40.0, 60.0, 60.0]  # doubling, capped at 60 s
        assert [v.job_id for v in panel.views] == [DEMO_JOB_ID]  # the last known state stays...
        assert panel.views[0].stale
        assert "server error" in (panel.views[0].error or "")
        status = plain(panel.query_one("#jobs-status"))
        assert "last known state, 1m 40s old" in status
        assert "retry in 1m 00s" in status  # ...with its age
        assert panel.query_one(JobTable).row_text(JOB_NAME)[1] == "CREATING"
        sim.clear_faults()
        await poll_now(pilot, panel)
        assert panel.outcome.delay == 10.0
        assert not panel.views[0].stale
        assert "updated just now" in plain(panel.query_one("#jobs-status"))


async def test_poller_backs_off_and_stops_on_a_rejected_key(sim: FireworksSim) -> None:
    seeded(sim)
    clock = [NOW]
    poller = JobsPoller(sim_source(sim), interval=5.0, max_interval=30.0, clock=lambda: clock[0])
    first = poller.poll()
    assert first.error is None
    assert first.updated_at == NOW
    assert [v.job_id for v in first.views] == [DEMO_JOB_ID]
    sim.inject(500, times=2)
    clock[0] += 7
    assert [poller.poll().delay, poller.poll().delay] == [10.0, 20.0]
    sim.inject(401, times=1)
    rejected = poller.poll()
    assert rejected.fatal
    assert rejected.error is not None
    assert rejected.error.kind == "auth"
    assert rejected.updated_at == NOW
    assert rejected.views[0].stale
    assert rejected.views[0].age(clock[0]) == 7


async def test_cancel_asks_first_then_the_job_ends_cancelled_and_resumes(store: Store, sim: FireworksSim) -> None:
    seeded(sim)
    advance(sim, 4)
    app = sim_app(store, sim_source(sim))
    async with app.run_test(size=(120, 40)) as pilot:
        panel = await mounted_panel(pilot)
        await polled(pilot, panel, 1)
        await pilot.press("5", "K")
        await settle(pilot)
        assert isinstance(app.screen, Confirm)
        assert "svgagent-demo-job" in app.screen.question
        await pilot.press("n")
        await settle(pilot)
        assert not any(":cancel" in p for p in sim.paths())
        assert sim.job_state(DEMO_JOB_ID) == "JOB_STATE_RUNNING"
        await pilot.press("K", "y")
        await wait_until(pilot, lambda: states(app).get(DEMO_JOB_ID) == "CANCELLED")
        assert f"POST /v1/accounts/{ACCOUNT}/reinforcementFineTuningJobs/{DEMO_JOB_ID}:cancel" in sim.paths()
        assert sim.job_state(DEMO_JOB_ID) == "JOB_STATE_CANCELLED"
        assert any("cancel requested" in n for n in notifications(app))
        assert panel.check_action("cancel_job", ()) is False
        assert panel.check_action("resume_job", ()) is True
        await pilot.press("p")
        await wait_until(pilot, lambda: states(app).get(DEMO_JOB_ID) in ("RUNNING", "PROVISIONING"))
        assert f"POST /v1/accounts/{ACCOUNT}/reinforcementFineTuningJobs/{DEMO_JOB_ID}:resume" in sim.paths()
        assert sim.job_state(DEMO_JOB_ID) == "JOB_STATE_RUNNING"


async def test_links_copy_to_the_clipboard_and_open_only_with_a_browser(
    store: Store, sim: FireworksSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeded(sim)
    app = sim_app(store, sim_source(sim))
    async with app.run_test(size=(120, 40)) as pilot:
        await polled(pilot, await mounted_panel(pilot), 1)
        await pilot.press("5", "y")
        assert app.clipboard == f"{sim.base_url}/dashboard/fine-tuning/reinforcement/{DEMO_JOB_ID}"
        await pilot.press("l", "y")
        assert app.clipboard.startswith(f"{sim.base_url}/dashboard/datasets/svgagent-builtin-")
        monkeypatch.setattr(job_panel_module, "browser_available", lambda: False)
        await pilot.press("b")
        assert any("No web browser" in n and "press y" in n for n in notifications(app))
        opened: list[str] = []
        monkeypatch.setattr(job_panel_module, "browser_available", lambda: True)
        monkeypatch.setattr(job_panel_module.webbrowser, "open", lambda url, new=0: opened.append(url) or True)
        await pilot.press("b")
        assert opened == [app.clipboard]


async def test_launch_screen_validates_previews_without_sending_then_launches(store: Store, sim: FireworksSim) -> None:
    source = sim_source(sim, store)
    app = sim_app(store, sim_source(sim, store))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = RftLaunchScreen(source, app.settings)
        await app.push_screen(screen)
        await settle(pilot)
        epochs = screen.query_one("#rft-epochs", Input)
        epochs.value = "0"
        await pilot.pause()
        assert screen.problems["epochs"] == "out of range: allowed an integer from 1 to 10"
        assert "✗ out of range" in plain(screen.query_one("#hint-epochs"))
        assert epochs.has_class("-invalid")
        screen.query_one("#rft-lora_rank", Input).value = "12"
        screen.query_one("#rft-max_output_tokens", Input).value = "9000"
        screen.query_one("#rft-max_context_length", Input).value = "8192"
        await pilot.pause()
        assert "power of two" in screen.problems["lora_rank"]
        await pilot.press("f2")
        assert screen.stage == "form"
        assert screen.steps == []  # nothing prepared while fields are wrong
        epochs.value, screen.query_one("#rft-lora_rank", Input).value = "2", "16"
        await pilot.pause()
        assert "max-output-tokens (9000) must be smaller" in screen.problems[""]
        screen.query_one("#rft-max_output_tokens", Input).value = ""  # blank: the default
        await pilot.pause()
        assert screen.problems == {}
        assert screen.params is not None
        assert screen.params.epochs == 2
        await pilot.press("f2")
        await wait_until(pilot, lambda: screen.stage == "preview")
        lines = [f"{s.method} {s.path}" for s in screen.steps]
        assert lines[0] == "GET /verifyApiKey"
        assert "POST /v1/accounts/{account}/reinforcementFineTuningJobs" in lines
        # only what was typed is sent: Fireworks chooses the rest (no chunkSize, lossConfig, inferenceParameters)
        assert screen.steps[-1].body["trainingConfig"] == {
            "baseModel": "accounts/fireworks/models/qwen3-0p6b",
            "epochs": 2,
            "loraRank": 16,
            "maxContextLength": 8192,
        }
        assert not {"chunkSize", "lossConfig", "inferenceParameters"} & set(screen.steps[-1].body)
        secret = next(s for s in screen.steps if s.method == "POST" and s.path.endswith("/secrets"))
        assert secret.body["value"] == "••••"
        assert "sk-test-key" not in str(screen.steps)
        assert sim.requests == []  # a dry run sends nothing
        await pilot.press("y")
        await wait_until(pilot, lambda: screen.stage in ("done", "failed"), timeout=30)
        assert screen.stage == "done", screen.error
        assert [e.step for e in screen.events if e.status in ("done", "reused")] == [
            "account",
            "secrets",
            "secrets",
            "evaluator",
            "dataset",
            "job",
        ]  # judge key, then FIREWORKS_API_KEY
        paths = sim.paths()
        assert f"POST /v1/accounts/{ACCOUNT}/evaluatorsV2" in paths
        assert f"POST /v1/accounts/{ACCOUNT}/datasets" in paths
        assert f"POST /v1/accounts/{ACCOUNT}/reinforcementFineTuningJobs" in paths
        remembered = store.list_jobs()
        assert [j["job_name"] for j in remembered] == [screen.result.job_name]
        assert remembered[0]["base_url"] == sim.base_url
        assert remembered[0]["dataset"].startswith(f"accounts/{ACCOUNT}/datasets/svgagent-builtin-")


async def test_new_job_from_the_pane_appears_there_and_stop_works_between_steps(
    store: Store, sim: FireworksSim
) -> None:
    app = sim_app(store, sim_source(sim, store))
    async with app.run_test(size=(120, 40)) as pilot:
        panel = await mounted_panel(pilot)
        await polled(pilot, panel, 1)
        assert panel.views == ()
        assert "No RFT jobs" in plain(panel.query_one("#jobs-detail"))
        await pilot.press("5", "n")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RftLaunchScreen)
        await pilot.press("enter")  # enter in a field: the dry run
        await wait_until(pilot, lambda: screen.stage == "preview")
        sim.config.response_delay_s = 0.5  # every request takes a while: esc lands during an early step
        await pilot.press("y", "escape")
        await wait_until(pilot, lambda: screen.stage == "stopped")
        assert screen.error.startswith("launch stopped before the ")
        assert not any(p.endswith("/evaluatorsV2") or ":upload" in p for p in sim.paths())  # stopped early
        sim.config.response_delay_s = 0.0
        await pilot.press("y")  # continue: the account is known, the rest follows
        await wait_until(pilot, lambda: screen.stage in ("done", "failed"), timeout=30)
        assert screen.stage == "done", screen.error
        name = screen.result.job_name
        await pilot.press("escape")
        await wait_until(pilot, lambda: any(v.name == name for v in panel.views))
        assert panel.query_one(JobTable).selected == name
        assert app.focused is panel.query_one(JobTable)
        assert [j["job_name"] for j in store.list_jobs()] == [name]


async def test_remembered_jobs_show_with_the_account_list_and_store_follows(store: Store, sim: FireworksSim) -> None:
    seeded(sim)
    other = "accounts/sim-account/reinforcementFineTuningJobs/gone-from-the-list"
    store.remember_job(
        job_name=other,
        base_url=sim.base_url,
        account=ACCOUNT,
        display_name="an old job",
        created="2020-01-01T00:00:00Z",
        last_state="COMPLETED",
        job={"name": other, "state": "JOB_STATE_COMPLETED", "createTime": "2020-01-01T00:00:00Z"},
    )
    store.remember_job(job_name=JOB_NAME, base_url=sim.base_url, account=ACCOUNT, last_state="CREATING")
    store.remember_job(
        job_name="accounts/x/reinforcementFineTuningJobs/elsewhere",
        base_url="http://127.0.0.1:1",
        account="x",
        last_state="RUNNING",
    )  # another control plane: not shown
    advance(sim, 2)
    source = sim_source(sim, store)
    jobs = source.fetch()
    assert [j["name"] for j in jobs] == [JOB_NAME, other]
    assert {j["job_name"]: j["last_state"] for j in store.list_jobs()}[JOB_NAME] == "VALIDATING"
    source.close()


async def test_eval_of_the_output_model_starts_a_named_run(store: Store) -> None:
    from svgagent.core.demo import demo_overrides, demo_simulator

    jobs = [
        job("svgagent-demo-job", "COMPLETED", percent=100, processed=16, total=16, completed="2026-01-01T12:02:00Z")
    ]
    with demo_simulator(policy_latency_s=0.0, judge_latency_s=0.0) as openai_sim:
        overrides = {**demo_overrides(openai_sim.base_url), "rows": 4}
        overrides.pop("model")
        app = make_app(
            store, settings=settings_for(store.path, **overrides), job_source=fake_source(jobs), wall_clock=lambda: NOW
        )
        async with app.run_test(size=(120, 40)) as pilot:
            panel = await mounted_panel(pilot)
            await polled(pilot, panel, 1)
            await pilot.press("5")
            assert panel.check_action("eval_output", ()) is True
            await pilot.press("e")
            await settle(pilot)
            model = "accounts/test-account/models/svgagent-demo-job"
            run_id = app.control.run_id
            assert run_id is not None
            run = store.get_run(run_id)
            assert run.name == f"eval of {model}"
            assert run.settings["model"] == model
            shown = "".join(summary_lines(app)).replace(" ", "")
            assert model[:20] in shown  # the Config pane shows the model the run uses
            await pilot.press("3")
            await settle(pilot)
            assert app.dashboard.query_one("#config-form #field-model", Input).value == model
            assert not any("another dataset" in n for n in notifications(app))  # 4 builtin rows, like the job
            await wait_until(pilot, lambda: not app.control.running, timeout=30)
            assert store.get_run(run_id).status == "completed"


async def test_without_a_key_the_pane_says_what_to_set(store: Store) -> None:
    app = make_app(store, settings=settings_for(store.path, fireworks_api_key=None), job_source=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        panel = panel_of(app)
        assert panel.source is not None
        assert not panel.source.available
        assert "FIREWORKS_API_KEY is not set" in plain(panel.query_one("#jobs-detail"))
        await pilot.press("n")
        assert any("FIREWORKS_API_KEY" in n for n in notifications(app))


async def test_demo_mode_starts_a_simulator_with_a_job_that_progresses(store: Store) -> None:
    app = make_app(store, demo=True, job_source=None, wall_clock=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        panel = await mounted_panel(pilot)
        await polled(pilot, panel, 1)
        assert panel.source is not None
        assert panel.source.demo
        assert panel.interval == 2.0
        assert [v.job_id for v in panel.views] == [DEMO_JOB_ID]
        assert panel.views[0].links["job"].startswith("http://127.0.0.1:")
        sim_url = panel.source.base_url
    assert panel.source.base_url is None
    assert sim_url  # closed with the app: the simulator is stopped


async def test_keys_have_ids_and_show_in_help_footer_and_palette(store: Store) -> None:
    app = make_app(store, job_source=fake_source(sample_jobs()))
    async with app.run_test(size=(120, 40)) as pilot:
        await polled(pilot, await mounted_panel(pilot), 1)
        await pilot.press("5")
        await settle(pilot)
        active = {b.binding.id for b in app.screen.active_bindings.values() if b.enabled}
        assert {"jobs.refresh", "jobs.new", "jobs.cancel", "jobs.copy_link", "jobs.open_link"} <= active
        assert "jobs.eval_output" not in active  # the selected job is still running
        sections = dict(binding_sections(app))
        ids = {b.id for b in sections["Jobs pane (RFT)"]}
        assert {
            "jobs.refresh",
            "jobs.cancel",
            "jobs.resume",
            "jobs.new",
            "jobs.copy_link",
            "jobs.open_link",
            "jobs.eval_output",
        } <= ids
        assert all(b.id and b.description for b in sections["Jobs pane (RFT)"] + sections["RFT launch screen"])
        await pilot.press("j")  # the completed job: its output model can be evaluated
        assert panel_of(app).check_action("eval_output", ()) is True
