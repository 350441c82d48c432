"""Command palette (ctrl+p): every key-bound action of the screen you are on, searchable by its description.

One provider: the bindings active where the focus is (the focused widget, its containers, the screen, the app),
then the bindings of the other widgets on the screen that name themselves for the palette (``PALETTE_TITLE``:
the Config, Secrets and Jobs panes), run on that widget. Those widgets' actions are listed under their name
("Config: Save config") wherever the focus is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    help: str
    run: Callable[[], object]


def _help(key: str, binding: Binding) -> str:
    return f"key {key}" + (f" — {binding.tooltip}" if binding.tooltip else "")


def screen_commands(screen: Screen[object]) -> list[Command]:
    """What the palette offers on ``screen``, each binding once (by id)."""
    app = screen.app
    found: list[Command] = []
    seen: set[str] = set()
    for active in screen.active_bindings.values():
        binding = active.binding
        ident = binding.id or f"{type(active.node).__name__}.{binding.action}"
        if not binding.description or ident in seen or binding.system:
            continue
        seen.add(ident)
        title = getattr(type(active.node), "PALETTE_TITLE", "")
        found.append(Command(f"{title}: {binding.description}" if title else binding.description,
                             _help(app.get_key_display(binding), binding),
                             partial(app.run_action, binding.action, active.node)))
    for widget in screen.query("*"):
        title = getattr(type(widget), "PALETTE_TITLE", "")
        if not title:
            continue
        for binding in type(widget).BINDINGS:
            if not isinstance(binding, Binding) or not binding.show or not binding.description:
                continue
            ident = binding.id or f"{type(widget).__name__}.{binding.action}"
            if ident in seen or widget.check_action(binding.action, ()) is False:
                continue
            seen.add(ident)
            found.append(Command(f"{title}: {binding.description}",
                                 _help(app.get_key_display(binding), binding),
                                 partial(widget.run_action, binding.action)))
    return found


class ScreenCommands(Provider):
    async def discover(self) -> Hits:
        for command in screen_commands(self.screen):
            yield DiscoveryHit(command.name, command.run, help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in screen_commands(self.screen):
            score = max(matcher.match(command.name), matcher.match(command.help) * 0.5)
            if score > 0:
                yield Hit(score, matcher.highlight(command.name), command.run, help=command.help)
