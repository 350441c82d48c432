"""`?`: every key of every screen (as remapped by the user's keymap), and the filter language."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, cast

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from svgagent.screens.compare import CompareScreen
from svgagent.screens.dashboard import Dashboard
from svgagent.screens.export_dialog import ExportDialog
from svgagent.screens.leaderboard import LeaderboardScreen
from svgagent.screens.rollout_detail import RolloutDetail
from svgagent.screens.run_picker import RunPicker
from svgagent.screens.stats import StatsScreen
from svgagent.screens.text_page import TextPage, page_bindings
from svgagent.tui.widgets.compare_table import CompareTable
from svgagent.tui.widgets.keys_footer import KeysFooter
from svgagent.tui.widgets.leaderboard_table import LeaderboardTable
from svgagent.tui.widgets.rollout_table import RolloutTable

if TYPE_CHECKING:
    from svgagent.tui.services import AppServices

FILTER_HELP = [
    (
        "score<0.5  score>=0.8",
        "compare: score (yours if overridden), judge_score, fulfilled, total, gen, judge, "
        "render, tokens, row, sample, attempt",
    ),
    ("status:failed", "the status the table shows: scored · invalid · failed once finished (a prefix is enough)"),
    ("row:3  sample:1  id:…", "row index (or row id), sample, text in the rollout id (or its eval-protocol id)"),
    (
        "invalid  overridden",
        "finished without a valid score, nothing broke · you overrode the judge (also: valid, cached, marked)",
    ),
    ("prompt:…  error:…", "text in the prompt · in the error"),
    ('red circle  "two words"', "free text, matched against the prompt, the row id and an eval-protocol rollout id"),
    ("-status:failed", "a leading - negates a term; all terms must hold"),
]


def binding_sections(app: App) -> list[tuple[str, list[Binding]]]:
    sections: list[tuple[str, list[Binding]]] = [
        ("Everywhere", [b for b in type(app).BINDINGS if isinstance(b, Binding)]),
        ("Dashboard", list(Dashboard.BINDINGS)),
        ("Rollout table", list(RolloutTable.BINDINGS)),
        ("Rollout screen", list(RolloutDetail.BINDINGS)),
        ("Run picker", list(RunPicker.BINDINGS)),
        ("Compare screen", list(CompareScreen.BINDINGS) + list(CompareTable.BINDINGS)),
        ("Stats screen", list(StatsScreen.BINDINGS)),
        ("Leaderboard", list(LeaderboardScreen.BINDINGS) + list(LeaderboardTable.BINDINGS)),
        ("Export dialog", list(ExportDialog.BINDINGS)),
    ]
    # imported here, not at the top: the help screen is opened long after the first frame, and these modules are
    # the later panes' and screens' (tui/app.py loads them after it)
    from svgagent.screens.confirm import Confirm
    from svgagent.screens.evaluate import EvaluateScreen
    from svgagent.screens.filmstrip import FilmstripScreen, RowPicker
    from svgagent.screens.health import HealthScreen
    from svgagent.screens.message_log import MessageLogScreen
    from svgagent.screens.rft_launch import RftLaunchScreen
    from svgagent.screens.rollout_actions import CopyMenu
    from svgagent.screens.sort_picker import SortPicker
    from svgagent.screens.training import TrainingScreen
    from svgagent.tui.widgets.choice_field import ChoiceField
    from svgagent.tui.widgets.config_form import ConfigForm
    from svgagent.tui.widgets.job_panel import JobPanel
    from svgagent.tui.widgets.job_table import JobTable
    from svgagent.tui.widgets.secrets_form import SecretsPane

    sections += [
        ("Config pane", [b for b in (*ConfigForm.BINDINGS, *ChoiceField.BINDINGS) if isinstance(b, Binding)]),
        ("Secrets pane", [b for b in SecretsPane.BINDINGS if isinstance(b, Binding)]),
        ("Jobs pane (RFT)", list(JobPanel.BINDINGS) + list(JobTable.BINDINGS)),
        ("RFT launch screen", list(RftLaunchScreen.BINDINGS)),
        ("Training screen", list(TrainingScreen.BINDINGS)),
        ("Filmstrip screen", list(FilmstripScreen.BINDINGS)),
        ("Prompt picker (filmstrip)", list(RowPicker.BINDINGS)),
        ("Evaluator health screen", list(HealthScreen.BINDINGS)),
        ("Before/after screen", list(EvaluateScreen.BINDINGS)),
        ("Sort picker", list(SortPicker.BINDINGS)),
        ("Copy menu", list(CopyMenu.BINDINGS)),
        ("Message log", list(MessageLogScreen.BINDINGS)),
        ("Help screen", list(HelpScreen.BINDINGS)),
        ("Confirmation", list(Confirm.BINDINGS)),
    ]
    return sections


def unknown_binding_ids(app: App, keymap: Mapping[str, str]) -> list[str]:
    """The ids of ``keymap`` that no binding of the app has (a typo would otherwise remap nothing, silently)."""
    known = {b.id for _, bindings in binding_sections(app) for b in bindings if b.id}
    return sorted(set(keymap) - known)


def key_text(app: App, binding: Binding, keymap: Mapping[str, str]) -> str:
    """The keys of ``binding`` as the user's ``keymap`` has them."""
    keys = keymap.get(binding.id, binding.key) if binding.id else binding.key
    shown = []
    for key in keys.split(","):
        key = key.strip()
        if key == binding.key.split(",")[0] and binding.key_display and binding.id not in keymap:
            shown.append(binding.key_display)
        else:
            shown.append(app.get_key_display(Binding(key, binding.action)))
    return " ".join(shown)


def binding_text(binding: Binding) -> str:
    """What a key does: its footer name and its tooltip, once (a tooltip that starts with the name is said alone:
    "Quit (a run in progress is stopped, …)", not "Quit — Quit (…)")."""
    name, more = binding.description, binding.tooltip
    if not more:
        return name
    if more.casefold().startswith(name.casefold()):
        return more
    return f"{name} — {more}"


def keys_table(app: App, sections: Iterable[tuple[str, list[Binding]]], keymap: Mapping[str, str]) -> Table:
    table = Table(box=None, show_header=False, pad_edge=False, expand=True)
    table.add_column("key", style="bold cyan", no_wrap=True, min_width=10)
    table.add_column("action", ratio=1)
    table.add_column("id", style="dim", no_wrap=True)
    for title, bindings in sections:
        table.add_row(Text(title, style="bold underline"), "", "")
        if title == "Everywhere":
            table.add_row(
                app.get_key_display(Binding(app.COMMAND_PALETTE_BINDING, "command_palette")),
                "Command palette — every action of the screen, searchable",
                "",
            )
        for binding in bindings:
            table.add_row(key_text(app, binding, keymap), binding_text(binding), binding.id or "")
        table.add_row("", "", "")
    return table


def filter_table() -> Table:
    table = Table(box=None, show_header=False, pad_edge=False, expand=True)
    table.add_column("example", style="bold cyan", no_wrap=True)
    table.add_column("meaning", ratio=1)
    for example, meaning in FILTER_HELP:
        table.add_row(example, meaning)
    return table


class HelpScreen(TextPage):
    BINDINGS = page_bindings("help", "escape,q,question_mark")
    BODY = "help-body"

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(RenderedOnce(*help_content(self.app)), id="help-text")
        yield KeysFooter()


PAGE_CHROME = 4  # the help page's padding (1 + 1) and its scrollbar gutter (2, always there: app.tcss), off the width
_RENDERED: dict[tuple[object, int], list[list[Segment]]] = {}  # (what the help says, width) -> its lines
_KEPT = 8


def help_content(app: App) -> tuple[RenderableType, object]:
    """What the help shows, and a key that is equal when it shows the same (the keys, their names, the keymap)."""
    keymap = cast("AppServices", app).keymap
    sections = binding_sections(app)
    key = tuple(
        (title, tuple((key_text(app, b, keymap), binding_text(b), b.id) for b in bindings))
        for title, bindings in sections
    )
    intro = Text.assemble(
        ("svgagent keys", "bold"),
        " — remap any of them by id in the [keymap] table of your config file, e.g. ",
        ('"app.run" = "ctrl+r"', "italic"),
        ". ctrl+p opens the command palette with every action.",
    )
    content = Group(
        intro,
        Text(""),
        keys_table(app, sections, keymap),
        Text("Filter (press / on the table)", style="bold underline"),
        filter_table(),
    )
    return content, key


def rendered_lines(
    console: Console, options: ConsoleOptions, renderable: RenderableType, key: object
) -> list[list[Segment]]:
    """``renderable``'s lines at ``options.max_width``, rendered once per process (a table of a hundred keys is
    most of what opening the help costs)."""
    found = _RENDERED.get((key, options.max_width))
    if found is None:
        found = console.render_lines(renderable, options, pad=False)
        if len(_RENDERED) >= _KEPT:
            _RENDERED.clear()
        _RENDERED[(key, options.max_width)] = found
    return found


class RenderedOnce:
    """A renderable drawn from :func:`rendered_lines`: the same help at the same width is laid out once."""

    def __init__(self, renderable: RenderableType, key: object) -> None:
        self.renderable, self.key = renderable, key

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(options.max_width, options.max_width)  # the page's width: nothing laid out to know it

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for i, line in enumerate(rendered_lines(console, options, self.renderable, self.key)):
            if i:
                yield Segment.line()
            yield from line


def warm_help(app: App) -> Callable[[], object]:
    """The help as the next `?` will show it (read from the app's bindings and keymap, which nothing changes
    meanwhile); returns its rendering, for a thread after the first frame, so that `?` finds its lines ready."""
    renderable, key = help_content(app)
    console = app.console
    options = console.options.update(width=max(20, app.size.width - PAGE_CHROME), highlight=False)
    return lambda: rendered_lines(console, options, renderable, key)
