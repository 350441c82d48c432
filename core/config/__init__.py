"""The settings and what guards them: one pydantic-settings model read from every layer, the project files read as
untrusted input, the keys (.env), the Config pane's fields, endpoint and limit confirmations, key checks.

May import: ``svgagent.core.store`` (a stored run's defaults), the shared top-level modules and ``scoring``."""
