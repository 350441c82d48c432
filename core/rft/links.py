"""Fireworks dashboard links for the resources we create.

`https://api.fireworks.ai` → `https://app.fireworks.ai`; any other `api.X` → `app.X`. A loopback base URL (the
local simulator) keeps its host and port, so links stay clickable and are plainly local.
"""

from __future__ import annotations

from urllib.parse import urlsplit

DEFAULT_API_BASE = "https://api.fireworks.ai"
_LOOPBACK = {"localhost", "::1"}


def app_url(base_url: str | None) -> str:
    """The dashboard origin that belongs to a control-plane base URL."""
    parts = urlsplit((base_url or DEFAULT_API_BASE).strip())
    host = (parts.hostname or "").lower()
    if host in _LOOPBACK or host.startswith("127."):
        return f"{parts.scheme or 'http'}://{parts.netloc}"
    port = f":{parts.port}" if parts.port else ""
    if host.startswith("api."):
        return f"https://app.{host[4:]}{port}"
    return f"{parts.scheme or 'https'}://{parts.netloc}"


def _last(name_or_id: str) -> str:
    """`accounts/a/evaluators/x` → `x`; a bare id is returned as is."""
    return name_or_id.rstrip("/").rsplit("/", 1)[-1]


def evaluator_link(base_url: str | None, evaluator_id: str) -> str:
    return f"{app_url(base_url)}/dashboard/evaluators/{_last(evaluator_id)}"


def dataset_link(base_url: str | None, dataset_id: str) -> str:
    return f"{app_url(base_url)}/dashboard/datasets/{_last(dataset_id)}"


def job_link(base_url: str | None, job_name_or_id: str) -> str:
    return f"{app_url(base_url)}/dashboard/fine-tuning/reinforcement/{_last(job_name_or_id)}"
