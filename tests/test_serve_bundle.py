"""The evaluator bundle's remote mode (`svgagent rft create --rollouts remote --remote-url URL`): the bundle's
evaluation_test uses eval-protocol's RemoteRolloutProcessor(remote_base_url=URL), the launch plan says the URL must
be reachable from the platform, and the default single-turn bundle is unchanged. (Run by eval-protocol itself:
tests/test_serve_ep.py.)"""

from __future__ import annotations

import json

import pytest

from svgagent.core.config.settings import load_settings
from svgagent.core.rft.bundle_entry import CONFIG_FILE, JudgeConfig
from svgagent.core.rft.evaluator_bundle import build_bundle, config_from_settings
from svgagent.tui.cli.main import main

URL = "https://rollouts.example.com"


def test_remote_mode_is_baked_into_the_bundle_and_names_another_evaluator() -> None:
    base = config_from_settings(load_settings())
    single, remote = build_bundle(config=base), build_bundle(config={**base, "rollouts": "remote", "remote_url": URL})
    manifest = json.loads(remote.files[CONFIG_FILE])
    loaded = JudgeConfig.from_dict(manifest["config"])
    assert (loaded.rollouts, loaded.remote_url) == ("remote", URL)
    assert JudgeConfig.from_dict(single.config).rollouts == "single-turn"
    assert "rollouts" not in single.config
    assert remote.evaluator_id != single.evaluator_id  # another processor: another evaluator, never a reused one


def test_rft_create_remote_dry_run_says_the_url_must_be_reachable(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["rft", "create", "--demo", "--rows", "2", "--rollouts", "remote", "--remote-url", URL + "/", "--dry-run"]
    )
    text = capsys.readouterr()
    assert code == 0, text.err
    out = text.out + text.err
    assert f"POST {URL}/init" in out
    assert "must be reachable from the Fireworks platform" in out


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--rollouts", "remote"], "--rollouts remote needs --remote-url"),
        (["--remote-url", URL], "--remote-url needs --rollouts remote"),
        (["--rollouts", "remote", "--remote-url", "ftp://x"], "--remote-url must be an http:// or https:// URL"),
    ],
    ids=["no-url", "url-without-remote", "bad-url"],
)
def test_rft_create_refuses_an_incomplete_remote_mode(
    flags: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rft", "create", "--demo", "--rows", "2", "--dry-run", *flags]) == 2
    assert words in capsys.readouterr().err
