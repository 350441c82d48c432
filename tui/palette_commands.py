"""Command palette (ctrl+p): every key-bound action of the screen you are on, searchable by its description.

One provider (the app's only one): the bindings active where the focus is (the focused widget, its containers, the
screen, the app), then the bindings of the other widgets on the screen that name themselves for the palette
(``PALETTE_TITLE``: the Config, Secrets and Jobs panes), run on that widget; those widgets' actions are listed under
their name ("Config: Save config") wherever the focus is. Last, Textual's own commands (theme, screenshot…) that
no key of the app already gives (its Quit would skip stopping the run; its Keys panel is less than `?`).
Each action once, whichever keys reach it.
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
    """What the palette offers on ``screen``, each action once (the binding with an id, one of ours, wins)."""
    app = screen.app
    found: list[Command] = []
    seen: set[str] = set()
    where: dict[tuple[object, str], tuple[int, bool]] = {}  # (node, action) → index in found, had an id
    for active in screen.active_bindings.values():
        binding = active.binding
        ident = binding.id or f"{type(active.node).__name__}.{binding.action}"
        if not binding.description or ident in seen or binding.system:
            continue
        seen.add(ident)
        title = getattr(type(active.node), "PALETTE_TITLE", "")
        command = Command(
            f"{title}: {binding.description}" if title else binding.description,
            _help(app.get_key_display(binding), binding),
            partial(app.run_action, binding.action, active.node),
        )
        earlier = where.get((active.node, binding.action))
        if earlier is None:
            where[(active.node, binding.action)] = (len(found), binding.id is not None)
            found.append(command)
        elif binding.id is not None and not earlier[1]:  # e.g. Textual's ctrl+q, then our q: keep ours
            found[earlier[0]] = command
            where[(active.node, binding.action)] = (earlier[0], True)
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
            found.append(
                Command(
                    f"{title}: {binding.description}",
                    _help(app.get_key_display(binding), binding),
                    partial(widget.run_action, binding.action),
                )
            )
    names = {command.name for command in found}
    for system in app.get_system_commands(screen):
        if system.title not in names and system.title not in SUPERSEDED:
            found.append(Command(system.title, system.help, system.callback))
    return found


SUPERSEDED = {"Keys"}  # Textual's key panel: `?` lists every key, remapped


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
