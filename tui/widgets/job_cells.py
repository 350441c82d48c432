"""What the Jobs pane draws for RFT jobs: table cells, the selected job's details and the status line. Pure
functions of a `JobView` and a wall-clock time (so snapshots are deterministic); Rich only (``Column`` is the
tables' shared column description)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from svgagent.core.rft.job_metrics import LABELS as CURVE_LABELS
from svgagent.core.terminal_text import one_line, visible_line
from svgagent.tui.widgets.line_table import Column
from svgagent.tui.widgets.screen_text import shown, shown_line

if TYPE_CHECKING:
    from svgagent.core.rft.monitor import JobView

DASH = "–"
SPARK = "▁▂▃▄▅▆▇█"
LINK_KINDS = ("job", "dataset", "evaluator")
BAR_FULL, BAR_EMPTY = "━", "╌"
FRESH_S = (
    10.0  # a list fetched less than this long ago is "updated just now" (the status line need not tick each second)
)


# most important first: a narrow pane shows the left columns, the details show everything
COLUMNS: tuple[Column, ...] = (
    Column("job", "job", 15),
    Column("state", "state", 12),
    Column("percent", "%", 4, "right"),
    Column("bar", "progress", 10),
    Column("requests", "requests", 9, "right"),
    Column("elapsed", "elapsed", 7, "right"),
)


def state_style(view: JobView) -> str:
    from svgagent.core.rft.monitor import CATEGORY_STYLE

    return CATEGORY_STYLE.get(view.category, "")


def duration(seconds: float | None) -> str:
    from svgagent.core.rft.monitor import format_duration

    return format_duration(seconds)


def job_label(view: JobView) -> str:
    """What names a job in the table: its display name (what the person launching it chose or was shown, e.g.
    "svgagent builtin (33 rows) qwen3-0p6b"), else its id; the details under the table show both."""
    return visible_line(one_line(view.display_name) or view.job_id or view.name)


def bar(percent: int | None, width: int, style: str) -> Text:
    """A bar of ``width`` cells, filled to ``percent`` in ``style``."""
    filled = 0 if percent is None else max(0, min(width, round(width * percent / 100)))
    return Text.assemble((BAR_FULL * filled, style), (BAR_EMPTY * (width - filled), "dim"))


def elapsed(view: JobView, now: float) -> float | None:
    """Creation to completion, or to ``now`` while the job has not ended (an ended job without a completion time,
    e.g. a cancelled one, has no elapsed time to show)."""
    if view.terminal and not view.completed:
        return None
    return view.elapsed(now)


def cells_for(view: JobView, now: float) -> tuple[Text, ...]:
    """Every column (``COLUMNS`` order) for one job."""
    style = state_style(view)
    dim = "dim" if view.stale else ""
    percent = DASH if view.percent is None else f"{view.percent}%"
    requests = f"{view.processed}/{view.total}" if view.total else DASH
    return (
        Text(job_label(view), style=dim),  # the table cuts it to its column, its end marked "…"
        Text(view.phase, style=f"{style} {dim}".strip()),
        Text(percent, style=dim, justify="right"),
        bar(view.percent, COLUMNS[3].width, f"{style} {dim}".strip()),
        Text(requests, style=dim, justify="right"),
        Text(duration(elapsed(view, now)), style=dim, justify="right"),
    )


def format_created(created: str | None) -> str:
    """`2026-01-01 12:00 UTC` (UTC, so every machine shows the same)."""
    from svgagent.core.rft.monitor import parse_time

    parsed = parse_time(created)
    return DASH if parsed is None else f"{parsed.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def links_line(view: JobView, selected: str) -> Text:
    text = Text()
    for kind in LINK_KINDS:
        if kind not in view.links:
            continue
        if text:
            text.append("  ")
        text.append(f" {kind} ", style="reverse bold" if kind == selected else "")
    return text


def detail_key(view: JobView, now: float, link: str) -> tuple[object, ...]:
    """Everything `job_detail` shows depends on: equal keys, the same detail (``now`` only as the elapsed time; not
    when the view was fetched, which every poll changes)."""
    took = elapsed(view, now)
    return replace(view, fetched_at=0.0), link, None if took is None else duration(took)


def job_detail(view: JobView, now: float, link: str) -> RenderableType:
    """The selected job: name, coloured state with a progress bar, requests, times, output model, links. What the
    control plane says is outside text: every string of it goes in as :func:`shown` text (never markup)."""
    style = state_style(view)
    title = shown_line(view.job_id or view.name, style="bold")
    title.no_wrap, title.overflow = True, "ellipsis"
    if view.display_name:
        title.append(f"  {visible_line(view.display_name)}", style="dim")
    head = Table.grid(expand=True, padding=(0, 1))
    head.add_column(no_wrap=True)
    head.add_column(ratio=1, no_wrap=True, overflow="crop")
    head.add_column(no_wrap=True, justify="right")
    progress = DASH if view.percent is None else f"{view.percent}%"
    if view.epoch is not None and view.state in ("RUNNING", "WRITING_RESULTS"):
        progress += f" · epoch {view.epoch}"
    bar_style = "dim" if view.stale else style
    head.add_row(
        shown_line(view.phase, style=f"bold {style}"),
        ProgressBar(
            total=100, completed=view.percent or 0, complete_style=bar_style, finished_style=bar_style, style="bar.back"
        ),
        shown_line(progress),
    )

    rows = Table.grid(padding=(0, 1))
    rows.add_column(style="dim", no_wrap=True)
    rows.add_column(overflow="fold")
    requests = view.progress_text() or "none yet"
    if view.failed and "failed" not in requests:
        requests += f" ({view.failed} failed)"
    rows.add_row("requests", shown_line(requests))
    took = elapsed(view, now)
    when = format_created(view.created)
    if took is not None:
        when += f" · {duration(took)} {'in total' if view.terminal else 'elapsed'}"
    rows.add_row("created", shown_line(when))
    rows.add_row("output", shown_line(view.output_model or "– (named when the job starts)"))
    if view.status and view.category in ("error", "warning"):
        rows.add_row("status", shown(view.status, style=style))
    for name in view.curves.names()[:3]:  # the platform's own curves (outputMetrics), one line each
        points = view.curves.series[name]
        values = [value for _, value in points]
        line = f"{sparkline(values)} {values[0]:.3g} → {values[-1]:.3g} · step {points[-1][0]}"
        rows.add_row(shown_line(CURVE_LABELS.get(name, name)[:12]), shown_line(line))
    parts: list[RenderableType] = [title, head, rows]
    if view.links:
        picked = link if link in view.links else next(iter(view.links))
        rows.add_row("links", links_line(view, picked))
        rows.add_row("", shown_line(view.links[picked], style="underline"))
    return Group(*parts)


def sparkline(values: list[float], width: int = 16) -> str:
    """The last ``width`` values as block characters, from their lowest (▁) to their highest (█)."""
    shown_values = values[-width:]
    if not shown_values:
        return ""
    low, high = min(shown_values), max(shown_values)
    top = len(SPARK) - 1
    if high <= low:
        return SPARK[top // 2] * len(shown_values)
    return "".join(SPARK[round((v - low) / (high - low) * top)] for v in shown_values)


def status_line(
    *,
    count: int,
    updated_at: float | None,
    now: float,
    error: str | None,
    fatal: bool,
    next_in: float | None,
    connecting: bool,
) -> Text:
    """`3 jobs · updated 12 s ago`, or the last known state's age (and the next retry) when polls fail."""
    if connecting and updated_at is None and error is None:
        return Text("connecting…", style="dim")
    age = None if updated_at is None else max(0.0, now - updated_at)
    ago = "never" if age is None else ("just now" if age < FRESH_S else f"{duration(age)} ago")
    if error is not None:
        text = Text("⚠ ", style="bold yellow")
        text.append("last known state, " + (f"{duration(age)} old" if age is not None else "nothing fetched yet"))
        if fatal:
            text.append(" · stopped: u retries", style="bold red")
        elif next_in is not None:
            text.append(f" · retry in {duration(next_in)}", style="dim")
        return text
    text = Text(f"{count} job{'' if count == 1 else 's'}")
    text.append(f" · updated {ago}", style="dim")
    return text
