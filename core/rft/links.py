"""Fireworks dashboard links for the resources we create.

The control-plane host maps to its dashboard as eval-protocol maps it (`_map_api_host_to_app_host`):
`dev.api.fireworks.ai` → `dev.fireworks.ai`, `api.fireworks.ai` and `staging.api.fireworks.ai` → `app.fireworks.ai`,
any other `api.X` → `app.X`, anything else stays; the scheme is the base URL's. One addition: a loopback base URL (the
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
    scheme = parts.scheme or "https"
    if host in _LOOPBACK or host.startswith("127."):
        return f"{scheme}://{parts.netloc}"
    netloc = parts.netloc.lower() or host
    if netloc.startswith("dev.api.fireworks.ai"):
        return f"{scheme}://dev.fireworks.ai"
    if netloc in ("staging.api.fireworks.ai", "api.fireworks.ai"):
        return f"{scheme}://app.fireworks.ai"
    if netloc.startswith("api."):
        return f"{scheme}://app.{netloc[4:]}"
    return f"{scheme}://{netloc}"


def _last(name_or_id: str) -> str:
    """`accounts/a/evaluators/x` → `x`; a bare id is returned as is."""
    return name_or_id.rstrip("/").rsplit("/", 1)[-1]


def evaluator_link(base_url: str | None, evaluator_id: str) -> str:
    return f"{app_url(base_url)}/dashboard/evaluators/{_last(evaluator_id)}"


def dataset_link(base_url: str | None, dataset_id: str) -> str:
    return f"{app_url(base_url)}/dashboard/datasets/{_last(dataset_id)}"


def job_link(base_url: str | None, job_name_or_id: str) -> str:
    return f"{app_url(base_url)}/dashboard/fine-tuning/reinforcement/{_last(job_name_or_id)}"
