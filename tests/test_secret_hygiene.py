"""Known fake keys go in; they must come out nowhere: store, exports, --json, logs, terminal output, the app's
screens, the RFT launch's requests and the evaluator bundle it uploads.

The fake keys do not look like real ones (no ``fw_``/``sk-`` prefixes), so a scanner never mistakes them."""

from __future__ import annotations

import html
import io
import json
import logging
import os
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from svgagent.core.sim.simulator import Simulator

FW_KEY = "FAKEFW-hygiene-0123456789-policy"
OA_KEY = "FAKEOA-hygiene-9876543210-judge"
# in ./.env as well, where the environment shadows them: shown masked, never used, never sent
FILE_FW_KEY = "FAKEFW-dotenv-shadowed-4444-file"
FILE_OA_KEY = "FAKEOA-dotenv-shadowed-5555-file"
FILE_EXTRA = "FAKEXX-dotenv-extra-token-6666-ok"
ALL_KEYS = (FW_KEY, OA_KEY, FILE_FW_KEY, FILE_OA_KEY, FILE_EXTRA)


def _leaks(blob: bytes, keys: tuple[str, ...] = (FW_KEY, OA_KEY)) -> list[str]:
    found = []
    for key in keys:
        for form in (key, key[4:-4]):  # the whole key, or its unmasked middle
            if form.encode() in blob:
                found.append(form)
    return found


def _write_dotenv(directory: Path) -> Path:
    path = directory / ".env"
    path.write_text(f"FIREWORKS_API_KEY={FILE_FW_KEY}\nOPENAI_API_KEY={FILE_OA_KEY}\nEXTRA_TOKEN={FILE_EXTRA}\n")
    return path


def _svg_text(svg: str) -> str:
    """The characters a screenshot shows (the text of its <text> elements)."""
    return html.unescape("".join(re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)))


def _files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file() and p.name != ".env"]


def test_eval_export_and_store_never_hold_keys(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "SVGAGENT_HOME": str(home), "FIREWORKS_API_KEY": FW_KEY, "OPENAI_API_KEY": OA_KEY}
    outputs: list[bytes] = []
    with Simulator(judge_garbage_every=5, error_5xx_every=7) as sim:

        def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
            done = subprocess.run(
                [sys.executable, "-m", "svgagent.tui.cli.main", *args], env=env, capture_output=True, timeout=180
            )
            outputs.extend([done.stdout, done.stderr])
            return done

        ev = cli(
            "eval",
            "--base-url",
            sim.base_url,
            "--judge-base-url",
            sim.base_url,
            "--rows",
            "4",
            "--max-retries",
            "0",
            "--json",
        )
        assert ev.returncode in (0, 1), ev.stderr
        import json

        run_id = json.loads(ev.stdout)["run_id"]
        cli("runs", "show", run_id, "--json")
        cli("runs", "list", "--json")
        for fmt in ("jsonl", "csv"):
            cli("export", run_id, "--format", fmt, "-o", str(tmp_path / f"out.{fmt}"))
    files = [p for p in home.rglob("*") if p.is_file()] + [tmp_path / "out.jsonl", tmp_path / "out.csv"]
    assert any(p.name == "runs.db" for p in files)
    for path in files:
        assert _leaks(path.read_bytes()) == [], path
    for blob in outputs:
        assert _leaks(blob) == []


# --- the terminal app ------------------------------------------------------------------------------------------
async def test_tui_screens_store_and_logs_never_show_keys(
    tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run against the simulator with the keys from the environment (and others in ./.env), then a screenshot of
    every pane and screen: keys appear only masked (first 4 + last 4), never whole, never their middle."""
    from job_fakes import fake_source, sample_jobs
    from tui_support import make_app, settle, wait_until

    from svgagent.core.config.secrets import mask
    from svgagent.core.config.settings import load_settings
    from svgagent.core.store.run_store import Store
    from svgagent.screens.dashboard import PANES
    from svgagent.tui.widgets.secrets_form import SecretsPane

    monkeypatch.setenv("FIREWORKS_API_KEY", FW_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OA_KEY)
    _write_dotenv(isolated_env)
    log_file = tmp_path / "logs" / "svgagent-debug.log"
    log_file.parent.mkdir()
    handler = logging.FileHandler(log_file)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)  # everything anyone logs (the app, openai, httpx) goes to the file
    shots: dict[str, str] = {}
    try:
        with Simulator(judge_garbage_every=3) as sim, Store(tmp_path / "store" / "runs.db") as store:
            settings = load_settings(
                store=str(store.path), base_url=sim.base_url, judge_base_url=sim.base_url, rows=4, max_retries=0
            )  # the keys: from the environment (over ./.env)
            assert settings.fireworks_api_key is not None
            assert settings.fireworks_api_key.get_secret_value() == FW_KEY
            app = make_app(store, settings=settings, clock=time.monotonic, job_source=fake_source(sample_jobs()))
            async with app.run_test(size=(120, 40)) as pilot:
                await settle(pilot)
                await pilot.press("r")
                await wait_until(pilot, lambda: not app.control.running, timeout=60)
                await settle(pilot)
                run_id = app.dashboard.run_id
                assert run_id is not None
                assert all(r.status.terminal for r in store.list_rollouts(run_id))
                shots["dashboard"] = app.export_screenshot()
                for number, name in enumerate(PANES, start=1):
                    await pilot.press("escape", str(number))  # escape: out of a form field, so the digit is a key
                    await settle(pilot)
                    assert app.dashboard.active_pane == name
                    shots[f"pane {name}"] = app.export_screenshot()
                pane = app.dashboard.query_one(SecretsPane)
                assert {e.name for e in pane.entries} >= {"FIREWORKS_API_KEY", "OPENAI_API_KEY", "EXTRA_TOKEN"}
                assert pane.revealed == frozenset()  # nothing revealed
                for key, screen in (
                    ("enter", "rollout detail"),
                    ("question_mark", "help"),
                    ("o", "run picker"),
                    ("i", "stats"),
                    ("x", "export dialog"),
                ):
                    await pilot.press("1", "escape")
                    await settle(pilot)
                    await pilot.press(key)
                    await settle(pilot)
                    shots[screen] = app.export_screenshot()
                    await pilot.press("escape")
                    await settle(pilot)
                await pilot.resize_terminal(80, 24)  # one pane at a time, each at full width
                await settle(pilot)
                for number, name in enumerate(PANES, start=1):
                    await pilot.press("escape", str(number))
                    await settle(pilot)
                    assert app.dashboard.active_pane == name
                    shots[f"80x24 pane {name}"] = app.export_screenshot()
                await pilot.press("escape", "q")
        assert len(shots) == 16
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()
    for name, svg in shots.items():
        assert _leaks(svg.encode(), ALL_KEYS) == [], name
    secrets_shown = _svg_text(shots["80x24 pane secrets"])
    for key in (FW_KEY, OA_KEY, FILE_EXTRA):  # the pane shows them, masked
        assert mask(key) in secrets_shown, key
    assert log_file.stat().st_size > 0
    stored = _files_under(tmp_path / "store", tmp_path / "logs", isolated_env, tmp_path / "home")
    assert any(p.name == "runs.db" for p in stored)
    assert log_file in stored
    for path in stored:
        assert _leaks(path.read_bytes(), ALL_KEYS) == [], path


# --- RFT: a launch against the simulated Fireworks control plane ---------------------------------------------
def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "svgagent.tui.cli.main", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_rft_launch_sends_the_judge_key_only_as_a_secret(tmp_path: Path, isolated_env: Path) -> None:
    """`svgagent rft create … --yes --json` against the simulated control plane: the judge key leaves only as the
    value of the secret upload (masked in the request log); the Fireworks key only as the Authorization header
    (never logged, never sent to the storage URL); neither is in the output, the uploaded dataset or any file of
    the uploaded evaluator bundle."""
    from svgagent.core.sim.control_plane import FireworksSim
    from svgagent.core.sim.control_plane_state import MASK

    _write_dotenv(isolated_env)
    env = {
        **os.environ,
        "FIREWORKS_API_KEY": FW_KEY,
        "OPENAI_API_KEY": OA_KEY,
        "SVGAGENT_MAX_RETRIES": "0",
        "SVGAGENT_HOME": str(tmp_path / "home"),
    }
    with FireworksSim() as sim:
        env["FIREWORKS_BASE_URL"] = sim.base_url
        done = _cli(
            "rft",
            "create",
            "--base-model",
            "accounts/fireworks/models/qwen3-0p6b",
            "--rows",
            "3",
            "--yes",
            "--json",
            "--poll-interval",
            "0.01",
            env=env,
            cwd=isolated_env,
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        result = json.loads(done.stdout)
        evaluator_id = result["evaluator"]["name"].rsplit("/", 1)[-1]
        dataset_id = result["dataset"]["name"].rsplit("/", 1)[-1]
        archive = sim.evaluator_archive(evaluator_id)
        dataset = sim.dataset_bytes(dataset_id)
        requests, uploads, state = sim.requests, sim.uploads, sim.dump_state()
        uploaded_secret = sim.secret_value("openai-api-key")
    for blob in (done.stdout, done.stderr):
        assert _leaks(blob, ALL_KEYS) == []
    # the judge key went to Fireworks exactly once, as the secret's value — and the log shows it masked
    assert uploaded_secret == OA_KEY
    secret_posts = [r for r in requests if r.path.endswith("/secrets") or "/secrets/" in r.path]
    assert any(isinstance(r.body, dict) and r.body.get("value") == MASK for r in secret_posts), secret_posts
    logged = json.dumps([[r.method, r.path, r.query, r.body] for r in requests], default=str).encode()
    assert _leaks(logged, ALL_KEYS) == []
    assert _leaks(json.dumps(state, default=str).encode(), ALL_KEYS) == []
    assert uploads and not any(u["authorization_sent"] for u in uploads), uploads  # storage URLs get no key
    assert dataset is not None
    assert _leaks(dataset, ALL_KEYS) == []
    assert archive is not None
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as bundle:
        members = [m for m in bundle.getmembers() if m.isfile()]
        assert members
        for member in members:
            extracted = bundle.extractfile(member)
            assert extracted is not None
            assert _leaks(extracted.read(), ALL_KEYS) == [], member.name
    for path in _files_under(tmp_path / "home", isolated_env):
        assert _leaks(path.read_bytes(), ALL_KEYS) == [], path


def test_rft_demo_launch_never_shows_the_users_keys(tmp_path: Path, isolated_env: Path) -> None:
    """`svgagent rft create --demo --yes --json` with the user's (fake) keys in the environment and ./.env: the demo
    uses its own simulated keys, and the user's appear in no output and no file."""
    _write_dotenv(isolated_env)
    env = {**os.environ, "FIREWORKS_API_KEY": FW_KEY, "OPENAI_API_KEY": OA_KEY, "SVGAGENT_HOME": str(tmp_path / "home")}
    done = _cli(
        "rft",
        "create",
        "--demo",
        "--yes",
        "--json",
        "--rows",
        "3",
        "--base-model",
        "accounts/fireworks/models/qwen3-0p6b",
        env=env,
        cwd=isolated_env,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert json.loads(done.stdout)["simulated"] is True
    for blob in (done.stdout, done.stderr):
        assert _leaks(blob, ALL_KEYS) == []
    for path in _files_under(tmp_path / "home", isolated_env):
        assert _leaks(path.read_bytes(), ALL_KEYS) == [], path
