"""The app's heap and the cyclic garbage collector: full collections while nobody types.

A full (generation 2) collection walks every tracked object that is not frozen and holds the GIL meanwhile: the
loop, the key it is handling and the frame it is drawing wait. With a live run that was the longest stall of the
UI (bench/tui.py's real-engine part: 45 – 90 ms of CPU per collection, 150 – 290 ms of wall time at load 4 – 10,
one or two every 10 s), and no key has to wait for one. So :class:`HeapPolicy`:

- freezes what start-up built once the first frame is out (``gc.freeze``: modules, Textual's widgets and styles,
  ≈150k objects) and, a second later, again after importing in a thread what the panes import on first use
  (Pillow, term-image and its HTTP stack, Pygments' XML lexer, the Fireworks client: ≈30k objects, 240 modules
  that were otherwise walked by every full collection);
- raises the threshold of full collections while the app runs (``FULL_EVERY_GEN1``: with ≈45 young collections a
  second while a run streams, an automatic one after ≈4 minutes instead of every 5 – 10 s) and runs the one that
  is due itself, at the first check after ``IDLE_S`` without a key or a click (:meth:`collect_if_idle`, once a
  second);
- hands everything back on exit (the thresholds as they were, ``gc.unfreeze``).

Young collections (generations 0 and 1) run as before: reference counting and they free what dies young; only
the walk of the long-lived heap moves to a moment when nobody waits for the screen.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Callable

from svgagent.core.startup_gc import resume_collection

FREEZE_AGAIN_S = 1.0  # after the first frame: the lazily mounted panes are in
IDLE_S = 1.0  # no key or click for this long: a full collection that is due runs now
IDLE_CHECK_S = 1.0
FULL_EVERY_GEN1 = 1000  # while the app runs, gen2's threshold: a safety net (a person typing without a pause)
# imported on first use (the preview's first picture and SVG, the Jobs pane's client): before the second freeze
DEFERRED_IMPORTS = (
    "PIL.Image",
    "PIL.PngImagePlugin",
    "term_image.image",
    "rich.syntax",
    "pygments.lexers.html",
    "svgagent.core.rft.launch",
)


class HeapPolicy:
    """``clock``: monotonic seconds (the app's, injectable). Call :meth:`start` once the first frame is out,
    :meth:`input` on each key or click, :meth:`collect_if_idle` every ``IDLE_CHECK_S``, :meth:`stop` on exit."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.last_input = clock()
        self.full_collections = 0  # run by collect_if_idle (tests and benchmarks read it)
        self._due_every: int | None = None  # gen2's threshold before start(): a full collection is due after it
        self._saved: tuple[int, int, int] | None = None

    @property
    def started(self) -> bool:
        return self._saved is not None

    def start(self) -> None:
        """The first frame is out: freeze the heap, make full collections wait for an idle moment."""
        self.freeze()
        if self._saved is None:
            self._saved = gc.get_threshold()
            young, middle, full = self._saved
            self._due_every = max(1, full)
            gc.set_threshold(young, middle, max(full, FULL_EVERY_GEN1))

    def stop(self) -> None:
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None
        gc.unfreeze()

    @staticmethod
    def freeze() -> None:
        """Take what exists out of the collector's sight (it lives as long as the app); acyclic objects are still
        freed as usual. The first call also ends the start-up pause of `svgagent tui` (core/startup_gc)."""
        gc.freeze()
        resume_collection()

    @staticmethod
    def import_deferred() -> None:
        """Import what the panes import on first use (call in a thread, then :meth:`freeze` on the loop)."""
        from svgagent.tui.imaging import configure_term_image

        configure_term_image()  # term-image imported quietly, as the picture's worker does
        for name in DEFERRED_IMPORTS:  # all of them required: a broken install is reported as the worker's failure
            importlib.import_module(name)

    def input(self) -> None:
        self.last_input = self.clock()

    def collect_if_idle(self) -> bool:
        """Run the full collection that the default thresholds would have run by now, if nobody typed or clicked
        for ``IDLE_S``. True when it ran."""
        if self._due_every is None or self.clock() - self.last_input < IDLE_S:
            return False
        if gc.get_count()[2] < self._due_every:  # young collections since the last full one
            return False
        gc.collect()
        self.full_collections += 1
        return True
