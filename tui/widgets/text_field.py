"""A one-line text field whose typing does not lay out the screen.

Textual's ``Input`` sets its ``virtual_size`` (the text's width, for scrolling) on every change of its value, and
``virtual_size`` is a reactive that asks for a layout of the whole screen: each key typed into the filter or a
Config field reflowed the dashboard's every widget (80 layouts for a 50-character model name at 120×40, ~50 ms
each on a loaded machine, with a live run streaming meanwhile). Our fields are sized by their pane, not by their
text, so :class:`TextField` records the new width without that request and repaints itself; scrolling reads the
width from ``virtual_size`` as before. A field sized by its content (``width: auto``) still asks for its layout.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Input


class TextField(Input):
    def _watch_value(self, value: str) -> None:
        if not self.styles.auto_dimensions:
            size = Size(self.content_width, 1)
            if size != self.virtual_size:
                self.set_reactive(Widget.virtual_size, size)  # Input's own assignment below is then no change
                self.refresh()
        super()._watch_value(value)
