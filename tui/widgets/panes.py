"""The Config and Secrets panes: the forms other modules provide, or a placeholder saying what will be there."""

from __future__ import annotations

from pathlib import Path

from textual.widget import Widget
from textual.widgets import Static

from svgagent.core.settings import Settings


def config_pane(settings: Settings) -> Widget:
    try:
        from svgagent.tui.widgets.config_form import ConfigForm
    except ImportError:
        return Static("The settings form appears here (model, judge, dataset, concurrency, …).", id="config-form")
    return ConfigForm(settings, id="config-form")


def secrets_pane(env_file: Path, settings: Settings) -> Widget:
    try:
        from svgagent.core.verify_keys import control_plane_url

        from svgagent.tui.widgets.secrets_form import SecretsPane
    except ImportError:
        return Static(f"Keys (FIREWORKS_API_KEY, OPENAI_API_KEY) are read from {env_file}; the editor appears here.",
                      id="secrets-form")
    return SecretsPane(env_file, control_plane_url=control_plane_url(), policy_base_url=settings.base_url,
                       judge_base_url=settings.judge_base_url, id="secrets-form")
