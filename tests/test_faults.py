"""Faults of the machine, not of the model: a full disk, two workers on one run, SIGTERM, a damaged or read-only
store, huge answers. None of them may turn into a rollout's verdict or cost a paid answer twice.

The CLI cases run `svgagent` as a user does (a real process) against the project's simulator. The small-file-system
cases mount a tmpfs, which needs root; the same behaviour is also checked with an injected write failure.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_process import svgagent_argv

from svgagent.core.config.settings import load_settings
from svgagent.core.demo import demo_overrides
from svgagent.core.run.dataset import load_dataset
from svgagent.core.run.engine import Engine
from svgagent.core.run.setup import create_run
from svgagent.core.scoring.errors import RunBusy, StoreWriteError
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.scoring.render import Renderer
from svgagent.core.sim.simulator import Simulator
from svgagent.core.store.leases import LeaseOwner
from svgagent.core.store.run_store import Store
from svgagent.core.store.typed_rows import RunStatus

ROOT = os.geteuid() == 0


@pytest.fixture(scope="module")
def renderer() -> Iterator[Renderer]:
    with Renderer(size=128, workers=2) as r:
        yield r


def svgagent(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        svgagent_argv(*args), capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "svgagent.tui.cli.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def sim_args(sim: Simulator, store: Path) -> list[str]:
    assert sim.base_url is not None
    return [
        "--base-url",
        sim.base_url,
        "--judge-base-url",
        sim.base_url,
        "--model",
        "simulated-policy",
        "--judge-model",
        "simulated-judge",
        "--render-size",
        "128",
        "--store",
        str(store),
    ]


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIREWORKS_API_KEY", "fw-faults")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-faults")


def wait_for(condition, what: str, deadline_s: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    """Poll ``condition`` until it holds (a deadline only against hangs; nothing asserts on timing)."""
    end = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def db_value(db: Path, sql: str) -> object:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            row = con.execute(sql).fetchone()
            return row[0] if row else None
        finally:
            con.close()
    except sqlite3.Error:
        return None


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB tmpfs (root only; `test_injected_write_failure_...` covers the same ground without root)."""
    if not ROOT:
        pytest.skip("mounting a size-limited tmpfs needs root; the injected-failure test covers this case")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m,mode=0755", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


# --- 1. a full disk ------------------------------------------------------------------------------------------------


def test_full_disk_stops_the_run_interrupted_exit_2_and_resume_reuses_kept_answers(small_fs: Path, keys: None) -> None:
    db = small_fs / "runs.db"
    with Simulator(policy_huge_every=1, huge_answer_bytes=350_000, seed=3) as sim:
        out = svgagent("eval", *sim_args(sim, db), "--rows", "12", "--concurrency", "2", "--max-tokens", "131072")
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr
        errors = [line for line in out.stderr.splitlines() if line.startswith("svgagent: error:")]
        assert len(errors) == 1
        assert "database or disk is full" in errors[0]
        run_id = db_value(db, "SELECT run_id FROM runs")
        assert f"svgagent eval --store {db} --resume {run_id}" in errors[0]
        with Store(db, readonly=True) as store:
            rows = store.list_rollouts(str(run_id), heavy=True)
            status = store.get_run(str(run_id)).status
        # a storage error is never a rollout's verdict
        assert not [r for r in rows if r.status.terminal and "full" in (r.reason or "")]
        # stopped as interrupted, its lease given back: the small status write fits in the WAL space the failed
        # transaction had taken
        assert status is RunStatus.INTERRUPTED
        assert db_value(db, "SELECT lease_owner FROM runs") is None
        kept = sum(1 for r in rows if r.raw_answer is not None)
        paid = sim.stats()["requests"]["policy"]
        subprocess.run(["mount", "-o", "remount,size=128m", str(small_fs)], check=True)
        again = svgagent("eval", "--resume", str(run_id), *sim_args(sim, db))
        assert again.returncode in (0, 1), again.stderr
        with Store(db, readonly=True) as store:
            done = store.list_rollouts(str(run_id))
            assert store.get_run(str(run_id)).status is RunStatus.COMPLETED
        assert len(done) == 12
        assert all(r.status.terminal for r in done)
        # every answer that had been stored was used again; only the others were asked for anew
        assert sim.stats()["requests"]["policy"] - paid == 12 - kept


async def test_injected_write_failure_is_not_a_verdict_and_resume_reuses_answers(
    tmp_path: Path, renderer: Renderer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Simulator(seed=5) as sim:
        settings = load_settings(
            **demo_overrides(sim.base_url),
            store=tmp_path / "runs.db",
            rows=8,
            render_size=128,
            concurrency=1,
            judge_concurrency=1,
        )
        store = Store(settings.store_path())
        real = Store.write_batch  # the engine's writer commits its batches through it
        judged = {"n": 0}

        def failing(self: Store, rollouts: list, cache: tuple = ()) -> None:
            for _rollout_id, fields in rollouts:
                if fields.get("status") is RolloutStatus.SCORED or fields.get("status") is RolloutStatus.FAILED:
                    judged["n"] += 1
                    if judged["n"] == 3:  # the third verdict cannot be stored
                        raise StoreWriteError(f"cannot write the run store {self.path}: database or disk is full")
            real(self, rollouts, cache)

        monkeypatch.setattr(Store, "write_batch", failing)
        async with Engine(settings, store, renderer=renderer) as engine:
            run_id = engine.create_run(load_dataset("builtin"))
            with pytest.raises(StoreWriteError, match="disk is full"):
                await engine.run(run_id)
        monkeypatch.setattr(Store, "write_batch", real)
        rows = store.list_rollouts(run_id, heavy=True)
        assert store.get_run(run_id).status is RunStatus.INTERRUPTED
        assert sum(r.status.terminal for r in rows) == 2  # the failed write left its rollout unfinished
        with_answer = sum(1 for r in rows if not r.status.terminal and r.raw_answer is not None)
        assert with_answer >= 1
        paid = sim.stats()["requests"]["policy"]
        async with Engine(settings, store, renderer=renderer) as engine:
            summary = await engine.run(run_id)
        assert summary.done == 8
        assert sim.stats()["requests"]["policy"] - paid == 8 - 2 - with_answer


# --- 2. one run, one worker ------------------------------------------------------------------------------------------


def test_second_worker_on_the_same_run_is_refused(tmp_path: Path, keys: None) -> None:
    db = tmp_path / "runs.db"
    with Simulator(timeout_every=1, timeout_hang_s=300) as sim:  # the first worker's requests hang: it stays busy
        first = spawn("eval", *sim_args(sim, db), "--rows", "12", "--concurrency", "2")
        try:
            wait_for(lambda: db_value(db, "SELECT lease_owner FROM runs") is not None, "the first worker's lease")
            run_id = str(db_value(db, "SELECT run_id FROM runs"))
            second = svgagent("eval", "--resume", run_id, *sim_args(sim, db))
            assert second.returncode == 2, second.stderr
            assert f"run {run_id} is being processed by pid {first.pid}" in second.stderr
            assert len(second.stderr.strip().splitlines()) == 1
            assert first.poll() is None  # the first worker was not disturbed
        finally:
            first.send_signal(signal.SIGTERM)
            first.wait(timeout=60)
        # the second worker asked for nothing: only the first one's two requests (its concurrency) were made
        assert sim.stats()["requests"]["policy"] == 2


def test_two_resumes_of_one_run_at_once_one_is_refused(tmp_path: Path, keys: None) -> None:
    db = tmp_path / "runs.db"
    with Simulator() as sim:
        settings = load_settings(
            base_url=sim.base_url,
            judge_base_url=sim.base_url,
            model="simulated-policy",
            judge_model="simulated-judge",
            render_size=128,
            rows=12,
        )  # as sim_args says
        with Store(db) as store:
            run_id = create_run(settings, store, load_dataset("builtin"))
        sim.hold()  # the winner's requests wait: it stays busy until the test lets them go
        both = [spawn("eval", "--resume", run_id, "--concurrency", "2", *sim_args(sim, db)) for _ in range(2)]
        try:
            wait_for(lambda: any(p.poll() is not None for p in both), "one of the two resumes to give up")
            (loser,) = [p for p in both if p.poll() is not None]
            (winner,) = [p for p in both if p is not loser]
            _, stderr = loser.communicate(timeout=60)
            assert loser.returncode == 2, stderr
            assert f"run {run_id} is being processed by pid {winner.pid}" in stderr.strip().splitlines()[-1]
            assert "Traceback" not in stderr, stderr
            assert sim.wait_for_in_flight("policy", 2)
            assert winner.poll() is None
            # only the winner asked for answers (as many as its concurrency); the loser reset and paid for nothing
            assert sim.stats()["requests"]["policy"] == 2
        finally:
            for proc in both:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            sim.release()
            for proc in both:
                proc.communicate(timeout=60)


def test_a_dead_owners_lease_expires(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        run_id = store.create_run(name="r", settings={}, dataset={}, rows=[], samples=1)
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        store.acquire_lease(run_id, LeaseOwner(dead.pid, LeaseOwner.this_process().host, "old"))
        me = LeaseOwner.this_process()
        store.acquire_lease(run_id, me)  # its owner is gone: taken over at once
        store.release_lease(run_id, me)
        elsewhere = LeaseOwner(12345, "another-host", "remote")
        store.acquire_lease(run_id, elsewhere, now=1000.0)  # a heartbeat from another host, an hour old ...
        store.acquire_lease(run_id, me, now=1000.0 + 3600)  # ... has expired
        store.release_lease(run_id, me)
        store.acquire_lease(run_id, elsewhere)
        with pytest.raises(RunBusy, match="being processed by pid 12345 on host another-host"):
            store.acquire_lease(run_id, LeaseOwner.this_process())  # a fresh one has not
        with pytest.raises(RunBusy):
            store.new_attempts(run_id, [])  # nor may another process queue reruns meanwhile


# --- 3. SIGTERM ------------------------------------------------------------------------------------------------------


def test_sigterm_marks_the_run_interrupted_with_the_resume_hint(tmp_path: Path, keys: None) -> None:
    db = tmp_path / "runs.db"
    with Simulator(timeout_every=3, timeout_hang_s=300) as sim:  # every third request hangs: the run cannot end
        proc = spawn("eval", *sim_args(sim, db), "--rows", "16", "--concurrency", "2")
        wait_for(
            lambda: (db_value(db, "SELECT COUNT(*) FROM rollouts WHERE status IN ('scored','failed')") or 0) >= 2,
            "two finished rollouts",
        )
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    run_id = db_value(db, "SELECT run_id FROM runs")
    assert db_value(db, "SELECT status FROM runs") == "interrupted"
    assert db_value(db, "SELECT lease_owner FROM runs") is None
    assert f"Continue with: svgagent eval --store {db} --resume {run_id}" in stderr
    assert "Traceback" not in stderr, stderr


# --- 4. the cache choice belongs to the run --------------------------------------------------------------------------


async def test_no_cache_is_kept_on_resume(tmp_path: Path, renderer: Renderer) -> None:
    with Simulator(seed=2) as sim:
        base = {**demo_overrides(sim.base_url), "store": tmp_path / "runs.db", "rows": 4, "render_size": 128}
        store = Store(tmp_path / "runs.db")
        cached_settings = load_settings(**base, cache=True)
        async with Engine(cached_settings, store, renderer=renderer) as engine:  # fills the cache
            await engine.run(engine.create_run(load_dataset("builtin")))
        async with Engine(load_settings(**base, cache=False), store, renderer=renderer) as engine:
            run_id = engine.create_run(load_dataset("builtin"))
        assert store.get_run(run_id).settings["cache"] is False
        paid = sim.stats()["requests"]["policy"]
        # resumed by whoever holds settings that would use the cache (the app's session, a script): the run's own
        # choice wins, so every answer is asked for anew
        async with Engine(cached_settings, store, renderer=renderer) as engine:
            await engine.run(run_id)
        assert not any(r.cached for r in store.list_rollouts(run_id))
        assert sim.stats()["requests"]["policy"] - paid == 4


def test_a_cli_resume_keeps_the_runs_cache_choice(tmp_path: Path, keys: None) -> None:
    db = tmp_path / "runs.db"
    with Simulator(seed=4) as sim:
        first = svgagent("eval", *sim_args(sim, db), "--rows", "2", "--cache")  # fills the cache
        assert first.returncode in (0, 1), first.stderr
        settings = load_settings(
            **dict(
                zip(
                    ("base_url", "judge_base_url", "model", "judge_model", "render_size"),
                    (sim.base_url, sim.base_url, "simulated-policy", "simulated-judge", 128),
                )
            ),
            rows=2,
        )
        with Store(db) as store:  # a run started without the cache, stopped before its first answer
            run_id = create_run(settings, store, load_dataset("builtin"), cache=False)
        refused = svgagent("eval", "--resume", run_id, "--cache", *sim_args(sim, db))
        assert refused.returncode == 2
        assert refused.stderr.strip().splitlines() == [
            f"svgagent: error: run {run_id} was started without the response cache and a resume keeps that choice: "
            "drop --cache (or start a new run)"
        ]
        paid = sim.stats()["requests"]["policy"]
        again = svgagent("eval", "--resume", run_id, *sim_args(sim, db), env={"SVGAGENT_CACHE": "true"})
        assert again.returncode in (0, 1), again.stderr
        with Store(db, readonly=True) as store:
            assert [r.cached for r in store.list_rollouts(run_id)] == [False, False]
        assert sim.stats()["requests"]["policy"] - paid == 2


# --- 5. a damaged store ----------------------------------------------------------------------------------------------


@pytest.fixture
def damaged(tmp_path: Path) -> tuple[Path, str]:
    sys.path.insert(0, str(Path(__file__).parent))
    from factories import Spec, build_run

    db = tmp_path / "damaged.db"
    with Store(db) as store:
        run_id = build_run(store, [Spec(i, fulfilled=2) for i in range(30)])
        page = store.query("PRAGMA page_size")[0][0]
        root = store.query("SELECT rootpage FROM sqlite_master WHERE name = 'rollouts'")[0][0]
    with db.open("r+b") as handle:  # garbage over the rollouts table's root page (the runs table stays sound)
        handle.seek((root - 1) * page)
        handle.write(os.urandom(page))
    return db, run_id


@pytest.mark.parametrize(
    "command",
    [["runs", "show", "RUN"], ["export", "RUN"], ["export", "RUN", "--format", "csv"], ["runs", "stats", "RUN"]],
)
def test_damaged_store_is_one_line_and_nothing_half_written(damaged: tuple[Path, str], command: list[str]) -> None:
    db, run_id = damaged
    out = svgagent(*[run_id if word == "RUN" else word for word in command], "--store", str(db))
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""  # not the first half of an export
    assert out.stderr.count("\n") == 1
    assert "Traceback" not in out.stderr
    assert "the run store" in out.stderr
    assert "is damaged" in out.stderr
    assert "svgagent store check" in out.stderr


def test_store_check_finds_the_damage_and_backup_copies_a_sound_store(
    damaged: tuple[Path, str], tmp_path: Path
) -> None:
    db, _ = damaged
    check = svgagent("store", "check", "--store", str(db))
    assert check.returncode == 2
    assert "is damaged" in check.stderr
    assert "restore it from a backup" in check.stderr
    backups = tmp_path / "backups"
    backups.mkdir()
    refused = svgagent("store", "backup", str(backups / "bad.db"), "--store", str(db))
    assert refused.returncode == 2
    assert "failed its integrity check" in refused.stderr
    assert list(backups.iterdir()) == []  # no half copy, no -wal/-shm left beside it
    sound = tmp_path / "sound.db"
    with Store(sound) as store:
        run_id = store.create_run(name="kept", settings={}, dataset={}, rows=[], samples=1)
        backup = svgagent("store", "backup", str(backups / "copy.db"), "--store", str(sound))
    assert backup.returncode == 0, backup.stderr
    assert svgagent("store", "check", "--store", str(sound)).returncode == 0
    with Store(backups / "copy.db", readonly=True) as copy:
        assert copy.integrity_ok()
        assert [r.run_id for r in copy.list_runs()] == [run_id]
    assert [p.name for p in backups.iterdir()] == ["copy.db"]  # one self-contained file
    assert (backups / "copy.db").stat().st_mode & 0o777 == 0o600


async def test_the_app_opening_a_damaged_run_says_so_and_keeps_running(damaged: tuple[Path, str]) -> None:
    from tui_support import make_app, notifications, settle, table_of

    db, run_id = damaged
    with Store(db) as store:  # `svgagent tui --run RUN` on it ended in a traceback
        app = make_app(store, run_id=run_id)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            (shown,) = [n for n in notifications(app) if "is damaged" in n]
            assert "svgagent store check" in shown
            assert app.is_running
            assert not table_of(app).records
            await pilot.press("q")


# --- 6. a read-only store --------------------------------------------------------------------------------------------


def test_read_only_commands_work_on_a_read_only_store(tmp_path: Path) -> None:
    if not ROOT:
        pytest.skip("remounting read-only needs root; without it chmod cannot stop root either")
    mnt = tmp_path / "ro"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], check=True)
    try:
        sys.path.insert(0, str(Path(__file__).parent))
        from factories import build_run

        with Store(mnt / "runs.db") as store:
            run_id = build_run(store)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        for command in (
            ["runs", "list", "--json"],
            ["runs", "show", run_id],
            ["export", run_id],
            ["runs", "stats", run_id],
            ["store", "check"],
        ):
            out = svgagent(*command, "--store", str(mnt / "runs.db"))
            assert out.returncode == 0, (command, out.stderr)
            assert out.stdout
        writing = svgagent("runs", "show", "r", "--store", str(mnt / "missing.db"))
        assert writing.returncode == 2
        assert "no run store at" in writing.stderr
        listed = svgagent("runs", "list", "--store", str(mnt / "missing.db"))  # nothing to list: no error either
        assert listed.returncode == 0, listed.stderr
        assert not (mnt / "missing.db").exists()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


# --- 7. size caps ----------------------------------------------------------------------------------------------------


async def test_a_huge_answer_is_stored_capped_with_its_length_and_never_cached(
    tmp_path: Path, renderer: Renderer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from svgagent.core.store import size_caps as caps

    # caps a tenth of the real ones, so the simulator's answers (at most max_tokens long) go over them
    monkeypatch.setitem(caps.TEXT_CAPS, "raw_answer", caps.ANSWER_CAP // 10)
    monkeypatch.setitem(caps.TEXT_CAPS, "svg", caps.SVG_CAP // 10)
    with Simulator(policy_huge_every=1, huge_answer_bytes=300_000) as sim:
        settings = load_settings(
            **demo_overrides(sim.base_url),
            store=tmp_path / "runs.db",
            rows=2,
            render_size=128,
            cache=True,
            max_tokens=131072,
        )
        store = Store(settings.store_path())
        async with Engine(settings, store, renderer=renderer) as engine:
            run_id = engine.create_run(load_dataset("builtin"))
            await engine.run(run_id)
    for rec in store.list_rollouts(run_id, heavy=True):
        assert rec.truncated is not None
        assert rec.truncated["raw_answer"] > 300_000
        assert len(rec.raw_answer or "") == caps.ANSWER_CAP // 10
        assert rec.truncated["svg"] > 300_000
        assert len(rec.svg or "") == caps.SVG_CAP // 10
        assert rec.status is RolloutStatus.SCORED  # the whole answer was used; only the stored copy is cut
        assert "truncated" in [k for k in rec.public_dict() if rec.public_dict()[k]]
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT COUNT(*) FROM cache WHERE kind = 'policy'").fetchone()[0] == 0


async def test_a_judge_text_over_its_cap_is_stored_cut_and_never_cached(
    tmp_path: Path, renderer: Renderer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from svgagent.core.store import size_caps as caps

    cap = 40  # far below the simulated judge's answers, so each of them goes over it
    monkeypatch.setitem(caps.TEXT_CAPS, "judge_raw", cap)
    monkeypatch.setitem(caps.TEXT_CAPS, "rationale", cap)
    with Simulator(seed=6) as sim:
        settings = load_settings(
            **demo_overrides(sim.base_url), store=tmp_path / "runs.db", rows=2, render_size=128, cache=True
        )
        store = Store(settings.store_path())
        async with Engine(settings, store, renderer=renderer) as engine:
            run_id = engine.create_run(load_dataset("builtin"))
            await engine.run(run_id)
    judged = [r for r in store.list_rollouts(run_id, heavy=True) if r.judge_raw is not None]
    assert judged
    for rec in judged:
        assert rec.truncated is not None
        assert rec.truncated["judge_raw"] > cap
        assert rec.truncated["rationale"] > cap
        assert len(rec.judge_raw or "") == len(rec.rationale or "") == cap
    with sqlite3.connect(store.path) as db:
        kinds = dict(db.execute("SELECT kind, COUNT(*) FROM cache GROUP BY kind").fetchall())
    assert kinds.get("judge", 0) == 0  # a cut verdict is not cached (the answers, within their caps, are)
    assert kinds.get("policy") == 2


def test_judge_text_is_capped_and_marked(tmp_path: Path) -> None:
    from svgagent.core.store.size_caps import JUDGE_TEXT_CAP

    with Store(tmp_path / "runs.db") as store:
        from svgagent.core.scoring.models import DatasetRow

        run_id = store.create_run(name="r", settings={}, dataset={}, samples=1, rows=[DatasetRow(0, "r0", "p", ("a",))])
        (rid,) = [r.rollout_id for r in store.list_rollouts(run_id)]
        huge = "x" * (20 * 1024 * 1024)
        store.update_rollout(rid, judge_raw=huge, rationale=huge, reason="short")
        rec = store.get_rollout(rid)
        assert rec.truncated == {"judge_raw": len(huge), "rationale": len(huge)}
        assert len(rec.judge_raw or "") == len(rec.rationale or "") == JUDGE_TEXT_CAP
        store.update_rollout(rid, rationale="now short")
        assert store.get_rollout(rid).truncated == {"judge_raw": len(huge)}


async def test_the_rollout_screen_says_what_the_store_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from factories import RUN_ID, build_run
    from tui_support import make_app, plain, settle

    from svgagent.core.store import size_caps as caps

    monkeypatch.setitem(caps.TEXT_CAPS, "rationale", 50)
    with Store(tmp_path / "runs.db") as store:
        build_run(store)
        store.update_rollout(f"{RUN_ID}.0.0", rationale="the judge went on " + "and on " * 40)
        app = make_app(store, run_id=RUN_ID)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await pilot.press("enter")
            await settle(pilot)
            shown = plain(app.screen.query_one("#info-rationale"))
            assert "(stored cut: 50 of 298 characters kept)" in shown
            svg = plain(app.screen.query_one("#info-svg"))
            assert "stored cut" not in svg  # only what was cut says so
            await pilot.press("escape", "q")


# --- 18. failures by kind, not by their English ----------------------------------------------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_refused_connection_is_unreachable_not_a_timeout(tmp_path: Path, renderer: Renderer) -> None:
    from svgagent.core.exchange.export import rollout_status
    from svgagent.core.scoring.models import FailureKind

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    settings = load_settings(
        **demo_overrides(url), store=tmp_path / "runs.db", rows=2, max_retries=0, request_timeout_s=120
    )
    store = Store(settings.store_path())
    async with Engine(settings, store, renderer=renderer) as engine:
        run_id = engine.create_run(load_dataset("builtin"))
        await engine.run(run_id)
    for rec in store.list_rollouts(run_id):
        assert rec.failure_kind is FailureKind.UNREACHABLE
        assert "unreachable" in (rec.reason or "")
        assert "timed out" not in (rec.reason or "")
        assert rollout_status(rec)["code"] == 14  # UNAVAILABLE, not DEADLINE_EXCEEDED


def test_a_run_that_reached_no_endpoint_says_so_and_exits_2(tmp_path: Path, keys: None) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    out = svgagent(
        "eval",
        "--base-url",
        url,
        "--judge-base-url",
        url,
        "--rows",
        "2",
        "--max-retries",
        "0",
        "--store",
        str(tmp_path / "runs.db"),
    )
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("cannot reach an endpoint")]
    assert len(lines) == 1
    assert lines[0].endswith(" — 2 of 2")  # the app's summary bar names it the same way (core.analysis.failure_causes)
    assert url in lines[0]


@pytest.fixture
def odd_server() -> Iterator[str]:
    """A loopback endpoint whose /chat/completions answers are not chat completions."""
    import asyncio
    import threading

    from aiohttp import web

    bodies = {
        "sse": (b'data: {"choices": []}\n\ndata: [DONE]\n\n', "text/event-stream"),
        "utf8": (b'{"choices": [{"message": {"content": "\xff\xfe"}}]}', "application/json"),
        "shape": (b'{"choices": "none"}', "application/json"),
    }

    async def answer(request: web.Request) -> web.Response:
        body, kind = bodies[request.match_info["case"]]
        return web.Response(body=body, content_type=kind)

    app = web.Application()
    app.router.add_post("/{case}/v1/chat/completions", answer)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.run_until_complete(runner.cleanup())
        loop.close()


@pytest.mark.parametrize(
    ("case", "words"), [("sse", "server-sent event"), ("utf8", "UTF-8"), ("shape", "'choices' is not a list")]
)
async def test_bodies_that_are_not_chat_completions_are_bad_responses(
    odd_server: str, tmp_path: Path, renderer: Renderer, case: str, words: str
) -> None:
    from svgagent.core.scoring.models import FailureKind

    url = f"{odd_server}/{case}/v1"
    settings = load_settings(**demo_overrides(url), store=tmp_path / "runs.db", rows=1, max_retries=0)
    store = Store(settings.store_path())
    async with Engine(settings, store, renderer=renderer) as engine:
        run_id = engine.create_run(load_dataset("builtin"))
        await engine.run(run_id)
    (rec,) = store.list_rollouts(run_id)
    assert rec.failure_kind is FailureKind.BAD_RESPONSE
    assert not rec.is_score_valid
    assert words in (rec.reason or "")
    assert "AttributeError" not in (rec.reason or "")
    assert "UnicodeDecode" not in (rec.reason or "")
