"""Creating a run in the store from a dataset and the settings: the one step before any engine works on it.

Light on purpose (no HTTP clients): the app creates a run on its event loop and hands it to the engine's process.
"""

from __future__ import annotations

from svgagent.core.config.settings import Settings
from svgagent.core.run.dataset import Dataset
from svgagent.core.store.run_store import Store


def create_run(
    settings: Settings, store: Store, dataset: Dataset, *, name: str | None = None, cache: bool | None = None
) -> str:
    """Store a new run of ``dataset``: its first ``settings.rows`` rows, ``settings.samples`` samples each. The
    cache choice (``cache``, else ``settings.cache``) is stored with the run: a resume keeps it."""
    rows = list(dataset.rows[: settings.rows] if settings.rows else dataset.rows)
    ref = {"name": dataset.name, "source": dataset.source, "sha256": dataset.sha256, "rows": len(rows)}
    stored = {**settings.public_dict(), "cache": settings.cache if cache is None else cache}
    return store.create_run(name=name, settings=stored, dataset=ref, rows=rows, samples=settings.samples)
