"""Runs written out for people who do not run svgagent: one self-contained HTML file (`svgagent report`).

May import: ``serve`` (training steps), ``analysis``, ``store``, the shared top-level modules and ``scoring``."""
