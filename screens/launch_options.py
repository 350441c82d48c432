"""The launch screen's two choices beyond the hyperparameters: where the rollouts are made (the app's own rollout
server under `svgagent tui --serve`, another `svgagent serve`, or eval-protocol itself) and the share of the rows
kept out of training, to evaluate the trained model on (`rft evaluate`, `v` in the Jobs pane)."""

from __future__ import annotations

from collections.abc import Iterator

from textual.containers import Horizontal
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Label, Static

from svgagent.core.rft.holdout import MAX_FRACTION
from svgagent.core.serve.security import check_http_url

DEFAULT_HOLDOUT = "0.2"
HINTS = {
    "remote-url": "the rollout server Fireworks calls for every rollout (`svgagent serve`; empty: eval-protocol calls "
    "the policy itself)",
    "holdout": f"share of the rows kept out of training to evaluate the trained model on (0 to {MAX_FRACTION})",
}


def option_rows(serve_url: str | None) -> Iterator[Widget]:
    """The two rows of the form (label, field, hint), the rollout server prefilled with the app's own."""
    for name, label, value in (
        ("remote-url", "rollout server", serve_url or ""),
        ("holdout", "holdout", DEFAULT_HOLDOUT),
    ):
        yield Horizontal(
            Label(label, classes="field-label"),
            Input(value, id=f"launch-{name}", compact=True, placeholder="(none)"),
            classes="row",
        )
        yield Static(HINTS[name], id=f"hint-launch-{name}", classes="hint", markup=False)


def read_options(screen: Screen[object]) -> tuple[str | None, float, dict[str, str]]:
    """(the rollout server's URL or None, the held-out share, problems by field) as typed; each problem shown under
    its field."""
    url = screen.query_one("#launch-remote-url", Input).value.strip() or None
    text = screen.query_one("#launch-holdout", Input).value.strip()
    problems: dict[str, str] = {}
    if url is not None and check_http_url(url):
        problems["remote-url"] = f"the URL {check_http_url(url)}"
    try:
        holdout = float(text) if text else 0.0
        if not 0 <= holdout <= MAX_FRACTION:
            raise ValueError
    except ValueError:
        holdout = 0.0
        problems["holdout"] = f"a share from 0 to {MAX_FRACTION}, e.g. 0.2"
    for name in HINTS:
        hint = screen.query_one(f"#hint-launch-{name}", Static)
        hint.update(f"✗ {problems[name]}" if name in problems else HINTS[name])
        hint.set_class(name in problems, "-error")
        screen.query_one(f"#launch-{name}", Input).set_class(name in problems, "-invalid")
    return url, holdout, problems
