"""A stored run's pass threshold: its own setting, else one default, the same in every place that summarizes it
(the dashboard, a stop's stored summary, `runs show`, the statistics) — never this session's configured threshold
in one place and 0.5 in another."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tui_support import make_app, settings_for, settle

from svgagent.core.analysis.stats import run_stats
from svgagent.core.scoring.models import DatasetRow, RolloutStatus
from svgagent.core.store.run_store import Store

ROWS = [
    DatasetRow(0, "row_0", "Draw a red square.", ("A red square.",)),
    DatasetRow(1, "row_1", "Draw a blue circle.", ("A blue circle.",)),
]


def _run_without_a_threshold(store: Store) -> str:
    """A run as an older svgagent (or an import) stored it: no threshold among its settings; mean score 0.6."""
    run_id = store.create_run(name="no threshold", settings={"model": "m"}, dataset={"name": "d"}, rows=ROWS, samples=1)
    for rec, score in zip(store.list_rollouts(run_id), (1.0, 0.2), strict=True):
        store.update_rollout(rec.rollout_id, status=RolloutStatus.SCORED, score=score, is_score_valid=True)
    return run_id


async def test_a_run_stored_without_a_threshold_is_judged_by_the_same_one_everywhere(isolated_env: Path) -> None:
    with Store(isolated_env / "runs.db") as store:
        run_id = _run_without_a_threshold(store)
        app = make_app(store, run_id=run_id, settings=settings_for(store.path, threshold=0.8))  # configured: 0.8
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            shown = app.dashboard.run.threshold  # the dashboard's summary of the open run
            await asyncio.to_thread(app.control._stopped, run_id)  # a stop: the run's summary, stored
        stored = store.get_run(run_id).summary
        assert stored is not None
        assert shown == stored["threshold"]
        assert run_stats(store, run_id).threshold == shown
        assert store.summarize(run_id, shown).passed is stored["passed"]


def test_a_resumed_run_stored_without_a_threshold_keeps_that_fallback(isolated_env: Path) -> None:
    """A resume (the app's `c`, `svgagent eval --resume`) ends with the engine's own summary of the run: it too
    uses the run's threshold, else the one default, not this session's (here SVGAGENT_THRESHOLD=0.8)."""
    import json
    import os
    import subprocess

    from cli_process import svgagent_argv

    from svgagent.core.demo import DEMO_JUDGE_MODEL, DEMO_POLICY_MODEL
    from svgagent.core.store.typed_rows import DEFAULT_THRESHOLD

    db = isolated_env / "runs.db"
    with Store(db) as store:
        demo = {
            "model": DEMO_POLICY_MODEL,
            "judge_model": DEMO_JUDGE_MODEL,
            "base_url": "http://127.0.0.1:9",
            "judge_base_url": "http://127.0.0.1:9",
        }  # a demo run: `--demo` may resume it
        run_id = store.create_run(name="no threshold", settings=demo, dataset={"name": "d"}, rows=ROWS[:1], samples=1)
        app = make_app(store, settings=settings_for(store.path, threshold=0.8))
        assert app.settings_for_run(store.get_run(run_id).settings).threshold == DEFAULT_THRESHOLD
    env = {**os.environ, "SVGAGENT_THRESHOLD": "0.8"}
    out = subprocess.run(
        svgagent_argv("eval", "--demo", "--store", str(db), "--resume", run_id, "--json"),
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=isolated_env,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode in (0, 1), out.stderr
    assert json.loads(out.stdout)["threshold"] == DEFAULT_THRESHOLD
    with Store(db) as store:
        assert store.get_run(run_id).summary["threshold"] == DEFAULT_THRESHOLD
