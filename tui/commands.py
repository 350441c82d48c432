"""Command palette (ctrl+p): every key-bound action of the screen you are on, searchable by its description."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


class ActionCommands(Provider):
    """One command per binding active on the screen under the palette (its focused widget, the screen, the app)."""

    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        found: list[tuple[str, str, Callable[[], object]]] = []
        seen: set[str] = set()
        for active in self.screen.active_bindings.values():
            binding = active.binding
            ident = binding.id or f"{type(active.node).__name__}.{binding.action}"
            if not binding.description or ident in seen or binding.system:
                continue
            seen.add(ident)
            key = self.app.get_key_display(binding)
            help_text = f"key {key}" + (f" — {binding.tooltip}" if binding.tooltip else "")
            found.append((binding.description, help_text, partial(self.app.run_action, binding.action, active.node)))
        return found

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = max(matcher.match(name), matcher.match(help_text) * 0.5)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
