"""The summary line under the rollout table: progress, mean ± stderr, pass/fail, failures, tokens, time, overrides."""

from __future__ import annotations

from rich.text import Text

from svgagent.core.config.prices import Cost, usd_text
from svgagent.core.store.typed_rows import RunSummary, mean_text, spread_text
from svgagent.core.terminal_text import visible_line
from svgagent.tui.widgets.text_box import TextBox


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def estimate_eta(done_now: int, done_at_start: int, total: int, elapsed: float | None) -> float | None:
    """Seconds left at the pace of this session, or None before the first rollout finished."""
    finished = done_now - done_at_start
    if elapsed is None or finished <= 0 or elapsed <= 0:
        return None
    return (total - done_now) * elapsed / finished


def format_summary(
    s: RunSummary | None,
    *,
    run_label: str = "",
    elapsed: float | None = None,
    eta: float | None = None,
    shown: int | None = None,
    state: str = "",
    cost: Cost | None = None,
    cause: str = "",
) -> Text:
    """One line (wrapping when narrow) of everything the summary bar shows. Pure, for tests."""
    text = Text()
    if s is None:
        return Text("no run open", style="dim")
    sep = Text(" · ", style="dim")

    def part(*pieces: str | tuple[str, str]) -> None:
        if text:
            text.append_text(sep)
        for piece in pieces:
            text.append(piece) if isinstance(piece, str) else text.append(*piece)

    if run_label:
        part((visible_line(run_label), "bold"))  # a run's name: outside text
    if state:
        part((state, "italic"))
    part(f"{s.done}/{s.rollouts} done")
    if shown is not None and shown != s.rollouts:
        part((f"showing {shown}", "bold"))
    if s.mean_score is None:
        part("mean –")
    else:
        part(
            f"mean {mean_text(s.mean_score, s.threshold)}{spread_text(s.stderr)} ",
            ("PASS" if s.passed else "FAIL", "bold green" if s.passed else "bold red"),
            f" (≥{s.threshold:g})",
        )
    outcomes = s.outcomes.text()  # scored · invalid · failed: the one vocabulary (core/store/outcomes.py)
    part((outcomes, "red") if s.failed else outcomes)
    if cause:  # the dominant failure and its count (core.analysis.failure_causes): why, not only how many
        part((visible_line(cause), "bold red"))
    part(f"{s.prompt_tokens + s.completion_tokens:,} tokens")
    if cost is not None:  # policy and judge apart: the judge is often most of it
        part(f"{usd_text(cost.total_usd)} (policy {usd_text(cost.policy_usd)}, judge {usd_text(cost.judge_usd)})")
    part(f"elapsed {format_duration(elapsed)}")
    if state == "running":
        part(f"ETA {format_duration(eta)}")
    part((f"{s.overridden} overridden", "yellow") if s.overridden else "0 overridden")
    return text


class SummaryBar(TextBox):
    """Shows :func:`format_summary`; ``show`` keeps the last text so tests can read it. A live run refreshes it
    twice a second: the screen is laid out again only when its number of lines changes (:class:`TextBox`)."""

    DEFAULT_CSS = """
    SummaryBar { height: auto; max-height: 3; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("no run open", id=id)
        self.plain = "no run open"

    def show(self, text: Text) -> bool:  # type: ignore[override]
        self.plain = text.plain
        return super().show(text)
