"""The footer every screen shows: the keys that apply now, drawn as one line by one widget.

Textual's Footer is a container of one widget per key (a dozen on the dashboard), rebuilt — mounted, styled and laid
out — whenever the screen's bindings may have changed: every focus move. That was about a quarter of the CPU of a
start-up followed by a few pane switches. Here the keys are data: the footer keeps the list it draws, compares it
with the screen's bindings when they change, and repaints its one line when they differ (never a layout: its size
does not depend on what it shows). A click runs the key under the pointer, as Textual's footer keys do; the key under
the pointer is highlighted and its tooltip shown.

It draws what ``screens.keys_first.footer_width`` counts (a group of keys, as ``←→ A/B ``, one cell less): per action
``key label ``, the command palette's key on the right after a thin rule.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget


class FooterItem(NamedTuple):
    """One key as the footer shows it."""

    key: str  # the key pressed when it is clicked
    display: str  # how the key is written ("⏎", "^p")
    description: str
    enabled: bool
    tooltip: str
    group: str | None = None  # a binding group's description: its keys side by side, the description once


class KeysFooter(Widget, can_focus=False):
    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "keys-footer--key",
        "keys-footer--description",
        "keys-footer--hover",
        "keys-footer--rule",
    }
    DEFAULT_CSS = """
    KeysFooter {
        dock: bottom;
        height: 1;
        width: 1fr;
        text-wrap: nowrap;
        text-overflow: clip;
        color: $footer-foreground;
        background: $footer-background;
        .keys-footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .keys-footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .keys-footer--hover {
            background: $block-hover-background;
        }
        .keys-footer--rule {
            color: $foreground 20%;
        }
    }
    """

    def __init__(self, *, show_command_palette: bool = True, id: str | None = None) -> None:
        super().__init__(id=id)
        self.show_command_palette = show_command_palette
        self.items: tuple[FooterItem, ...] = ()  # the keys on the left, in order
        self.palette: FooterItem | None = None  # the command palette's key, on the right
        self._spans: list[tuple[int, int, FooterItem]] = []  # cells [start, end) of each key as last drawn
        self._hover: FooterItem | None = None

    def on_mount(self) -> None:
        # The first keys come with the screen's first bindings update (its widgets are all there by then).
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, screen: Screen) -> None:  # type: ignore[type-arg]
        if self.is_attached and screen is self.screen:
            self._update()

    def _wanted(self) -> tuple[tuple[FooterItem, ...], FooterItem | None]:
        """The keys to show: one per action (its first binding), in the screen's order; the palette's apart."""
        items: list[FooterItem] = []
        actions: set[str] = set()
        palette: FooterItem | None = None
        palette_key = self.app.COMMAND_PALETTE_BINDING
        show_palette = self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE
        for key, active in self.screen.active_bindings.items():
            binding = active.binding
            item = FooterItem(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                active.enabled,
                active.tooltip or binding.tooltip or binding.description,
                binding.group.description if binding.group is not None else None,
            )
            if key == palette_key:
                if show_palette:
                    palette = item
                continue
            if binding.show and binding.action not in actions:
                actions.add(binding.action)
                items.append(item)
        return tuple(items), palette

    def _update(self) -> None:
        items, palette = self._wanted()
        if (items, palette) != (self.items, self.palette):
            self.items, self.palette = items, palette
            self.refresh()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("keys-footer--key", partial=True)
        label_style = self.get_component_rich_style("keys-footer--description", partial=True)
        hover_style = self.get_component_rich_style("keys-footer--hover", partial=True)
        dim = Style(dim=True)
        line = Text(no_wrap=True, overflow="crop", end="")
        spans: list[tuple[int, int, FooterItem]] = []
        rule = "▏"  # before the palette's key, on the right
        tail = 0
        if self.palette is not None:  # "▏^p palette "
            tail = cell_len(rule) + cell_len(self.palette.display) + 1 + cell_len(self.palette.description) + 1
        room = self.size.width - tail  # the keys that do not fit whole leave the line (they still work; ? lists them)

        def add(item: FooterItem, label: str | None, gap: str = " ") -> None:
            start = line.cell_len
            extra = (hover_style if item == self._hover else Style()) + (Style() if item.enabled else dim)
            line.append(item.display, key_style + extra)
            if label:
                line.append(" " + label, label_style + extra)
            spans.append((start, line.cell_len, item))
            line.append(gap)

        items = self.items
        for index, item in enumerate(items):
            last = item.group is None or index + 1 == len(items) or items[index + 1].group != item.group
            label = item.description if item.group is None else (item.group if last else None)
            if room > 0 and line.cell_len + cell_len(item.display) + (1 + cell_len(label) if label else 0) > room:
                break  # never a key cut in the middle ("p Films"): this one and those after it stay off the line
            add(item, label, " " if last else "")
        if self.palette is not None:
            line.truncate(max(0, room))
            line.pad_right(max(0, room - line.cell_len))
            line.append(rule, self.get_component_rich_style("keys-footer--rule", partial=True))
            add(self.palette, self.palette.description)
        self._spans = spans
        return line

    def _item_at(self, x: int) -> FooterItem | None:
        for start, end, item in self._spans:
            if start <= x < end:
                return item
        return None

    def on_mouse_move(self, event: events.MouseMove) -> None:
        item = self._item_at(event.x)
        if item != self._hover:
            self._hover = item
            self.tooltip = (item.tooltip or None) if item is not None else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.refresh()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        item = self._item_at(event.x)
        if item is None:
            return
        if item.enabled:
            self.app.simulate_key(item.key)
        else:
            self.app.bell()

    def key_spans(self) -> list[tuple[int, int, FooterItem]]:
        """Each key's cells ``[start, end)`` on the line as last drawn."""
        return list(self._spans)

    def shown(self) -> dict[str, str]:
        """What the footer shows: key as written -> label (for tests and the help screen's checks)."""
        shown = {item.display: item.description for item in self.items}
        if self.palette is not None:
            shown[self.palette.display] = self.palette.description
        return shown
