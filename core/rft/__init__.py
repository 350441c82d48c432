"""svgagent.core.rft: the Fireworks side: control-plane client, hyperparameters, launch steps, job monitor and job
source, evaluator bundle and its entry file, dashboard links.

May import: ``exchange``, ``run``, ``config``, ``store``, the shared top-level modules and ``scoring``.
"""
