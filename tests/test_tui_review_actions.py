"""Review actions do what they say: Config's save writes only what the person changed (never demo values), `r`
refuses while a field is invalid and points at it, the key test in demo mode says it asked the simulator, and
leaving demo mode puts the real settings back into the Config pane."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from factories import RUN_ID
from textual.widgets import Input
from tui_support import burst, make_app, notifications, settings_for, settle, wait_until

from svgagent.core.config.secrets import write_env_file
from svgagent.core.demo import demo_overrides, demo_simulator
from svgagent.core.store.run_store import Store
from svgagent.tui.widgets.config_form import ConfigForm
from svgagent.tui.widgets.secrets_form import SecretsPane


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with demo_simulator(policy_latency_s=0.01, judge_latency_s=0.01) as sim:
        yield sim.base_url


def demo_app(store: Store, url: str, **kwargs: Any) -> Any:
    overrides = demo_overrides(url)
    return make_app(
        store,
        run_id=RUN_ID,
        demo=True,
        settings=settings_for(store.path, **overrides),
        demo_overrides=overrides,
        **kwargs,
    )


def field(app: Any, name: str) -> Input:
    return app.dashboard.query_one(f"#field-{name}", Input)


async def test_saving_config_in_demo_mode_writes_only_what_was_changed(store: Store, sim_url: str) -> None:
    app = demo_app(store, sim_url)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await burst(pilot, "3")
        assert field(app, "model").value == "simulated-policy"
        await burst(pilot, "tab", "tab", "enter", "ctrl+u", *"1.1", "ctrl+s")
        assert any("Saved temperature to svgagent.toml" in n for n in notifications(app))
    saved = tomllib.loads((Path.cwd() / "svgagent.toml").read_text())
    assert saved == {"temperature": 1.1}  # no simulator URL, no simulated model names


async def test_nothing_changed_nothing_saved(store: Store, sim_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Also while the form still checks the dataset it started with (a slow disk, a loaded machine): that check is
    no change of the person's."""
    import threading

    from svgagent.tui.widgets import config_form

    checked = threading.Event()
    load = config_form.load_dataset
    monkeypatch.setattr(config_form, "load_dataset", lambda source: (checked.wait(10), load(source))[1])
    app = demo_app(store, sim_url)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await wait_until(
            pilot,
            lambda: (
                bool(app.dashboard.query(ConfigForm))
                and app.focused is not None
                and app.dashboard.query_one(ConfigForm) in app.focused.ancestors
            ),
        )
        assert app.dashboard.query_one(ConfigForm)._dataset_pending is not None  # still checking
        await pilot.press("ctrl+s")
        checked.set()
        await settle(pilot)
        assert any("Nothing to save" in n for n in notifications(app)), notifications(app)
    assert not (Path.cwd() / "svgagent.toml").exists()


async def test_r_with_an_invalid_field_refuses_and_points_at_it(store: Store) -> None:
    app = make_app(store, run_id=RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        runs_before = len(store.list_runs())
        await burst(pilot, "3", "tab", "tab", "enter", "ctrl+u", *"abc", "escape", "escape", "r")
        assert not app.control.running
        assert len(store.list_runs()) == runs_before
        assert any(n.startswith("temperature: not a number") for n in notifications(app))
        assert app.dashboard.active_pane == "config"
        assert app.focused is field(app, "temperature")


async def test_the_key_test_in_demo_mode_says_it_asked_the_simulator(store: Store, sim_url: str) -> None:
    write_env_file(Path.cwd() / ".env", {"OPENAI_API_KEY": "FAKEOA-typed-by-a-person-123456"})
    app = demo_app(store, sim_url)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        pane = app.dashboard.query_one(SecretsPane)
        await burst(pilot, "4", "down", "t")  # OPENAI_API_KEY, the second row
        await settle(pilot)
        assert pane.status_of("OPENAI_API_KEY") == "simulator"
        said = [n for n in notifications(app) if n.startswith("OPENAI_API_KEY:")]
        assert len(said) == 1
        assert "the demo simulator answered" in said[0]
        assert "does not check keys with the real service" in said[0]
        assert "accepted" not in said[0]


async def test_leaving_demo_mode_puts_the_real_settings_in_the_config_pane(store: Store, sim_url: str) -> None:
    real = settings_for(store.path)
    app = demo_app(store, sim_url, settings_loader=lambda: real)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await burst(pilot, "3", "tab", "tab", "enter", "ctrl+u", *"1.3")  # a change the person made while in demo mode
        app.dashboard.query_one(SecretsPane).post_message(
            SecretsPane.Saved(app.dashboard.query_one(SecretsPane), ["OPENAI_API_KEY"])
        )
        await settle(pilot)
        assert not app.demo
        form = app.dashboard.query_one(ConfigForm)
        assert field(app, "model").value == real.model
        assert field(app, "base_url").value == real.base_url
        assert field(app, "temperature").value == "1.3"  # kept
        assert app.settings.base_url == real.base_url
        assert app.settings.temperature == 1.3
        assert form.edited() == {"temperature": 1.3}
