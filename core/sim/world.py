"""The demo world: the simulated services' state kept in the data directory's ``demo/``."""

from __future__ import annotations

TRAINED_MODELS_FILE = "trained-models.json"  # model → what trained it (svgagent.core.sim.policy_skill)
