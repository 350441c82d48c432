"""svgagent.tui.cli: the `svgagent` command line. Headless: only `cli/tui.py` imports Textual (lazily)."""
