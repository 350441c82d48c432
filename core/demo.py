"""Demo mode: the project's simulator on a free loopback port stands in for both the policy and the judge."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .simulator import SimConfig, Simulator

DEMO_POLICY_MODEL = "simulated-policy"
DEMO_JUDGE_MODEL = "simulated-judge"
DEMO_KEY = "simulated-key"


def demo_overrides(base_url: str) -> dict[str, Any]:
    """Settings that point both endpoints at a simulator; the names say the results are simulated."""
    return {
        "base_url": base_url,
        "judge_base_url": base_url,
        "model": DEMO_POLICY_MODEL,
        "judge_model": DEMO_JUDGE_MODEL,
        "fireworks_api_key": DEMO_KEY,
        "openai_api_key": DEMO_KEY,
    }


@contextmanager
def demo_simulator(policy_latency_s: float = 0.4, judge_latency_s: float = 0.3, **knobs: Any) -> Iterator[Simulator]:
    sim = Simulator(SimConfig(policy_latency_s=policy_latency_s, judge_latency_s=judge_latency_s, **knobs))
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()
