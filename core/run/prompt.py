"""The SVGBench prompt as Eval Protocol formats it, and the Eval Protocol dataset row built from it.

The wording below must stay byte-for-byte identical to the public SVGBench dataset (``formatted_prompt`` and the
user message of every row), so scores measured here are comparable with the published ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from svgagent.core.scoring.models import DatasetRow

# Appended to the original prompt after one space.
_INSTRUCTION = "Wrap the SVG code in an SVG code block following the example below."

# The tiny example answer shown to the model: an ```svg fence holding one red circle.
_EXAMPLE = (
    "Example:\n"
    "```svg\n"
    '<svg viewBox="0 0 100 100" width="100" height="100">\n'
    '    <circle cx="50" cy="50" r="40" fill="red" />\n'
    "</svg>\n"
    "```"
)


def format_requirements(requirements: Sequence[str]) -> str:
    """The requirements numbered ``1.``, ``2.``, ... one per line (no trailing newline)."""
    return "\n".join(f"{number}. {text}" for number, text in enumerate(requirements, start=1))


def format_prompt(prompt: str, requirements: Sequence[str]) -> str:
    """The user message sent to the policy: prompt, fence instruction, example, numbered requirements."""
    return f"{prompt} {_INSTRUCTION}\n\n{_EXAMPLE}\n\nRequirements:\n{format_requirements(requirements)}"


def ep_row(row: DatasetRow) -> dict[str, Any]:
    """The Eval Protocol dataset row (one JSONL line) for ``row``."""
    formatted = format_prompt(row.prompt, row.requirements)
    return {
        "messages": [{"role": "user", "content": formatted}],
        "input_metadata": {
            "row_id": row.row_id,
            "dataset_info": {
                "original_prompt": row.prompt,
                "requirements": list(row.requirements),
                "total_requirements": len(row.requirements),
                "formatted_prompt": formatted,
            },
        },
    }
