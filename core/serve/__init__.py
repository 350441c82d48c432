"""The remote rollout server (``svgagent serve``): eval-protocol's ``/init`` protocol on aiohttp.

protocol (the request, validated) · security (which key may go where) · status_log (statuses to the tracing
gateway) · rollout (one rollout: policy, SVG, picture, optional local judge; a deadline per stage) · recorder (the
store writes, batched) · admission (what /init may add: rollouts, bytes, free disk) · access_log · server (routes,
idempotency, shutdown) · wiring (a server from settings). Served rollouts are stored as training runs by
:mod:`svgagent.core.serve.training_runs`.

May import: ``exchange``, ``run``, ``config``, ``store``, the shared top-level modules and ``scoring``.
"""
