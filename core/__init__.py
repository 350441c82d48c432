"""svgagent.core: everything that works without a screen (never imports textual)."""
