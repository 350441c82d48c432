#!/usr/bin/env python3
"""Check an Eval Protocol JSONL file against the ``eval-protocol`` package's own ``EvaluationRow`` model.

Usage: python tests/ep_validate.py FILE.jsonl [FILE.jsonl ...]

Standalone on purpose: it runs in a separate virtualenv that has ``eval-protocol`` installed (see
``.ci/ep_validate.sh``), not in the project's test environment, so it imports nothing from svgagent and pytest
does not collect it (its name does not start with ``test_``).

Every non-blank line must be a JSON object that ``EvaluationRow.model_validate`` accepts. Pydantic ignores keys
a (non-``extra="allow"``) model does not declare, which would let an export put data where Eval Protocol silently
drops it; such keys are reported as failures too. Exit status: 0 all lines valid, 1 some line invalid (each
failure is printed with its file and line number), 2 usage error or unreadable file.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import Any

# eval-protocol pulls in litellm, which fetches a model price list from the internet at import time unless told
# to use its bundled copy. Validation must work offline.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

MAX_ERRORS_SHOWN = 50


def _ignored_keys(model: Any, data: Any, path: str = "") -> list[str]:
    """Keys of ``data`` that the validated pydantic ``model`` dropped (undeclared, and extras not allowed)."""
    from pydantic import BaseModel

    found: list[str] = []
    if isinstance(model, BaseModel) and isinstance(data, dict):
        cls = type(model)
        allows_extra = cls.model_config.get("extra") == "allow"
        known: dict[str, str] = {}
        for name, info in cls.model_fields.items():
            known[name] = name
            if info.alias:
                known[info.alias] = name
        for key, value in data.items():
            if key not in known:
                if not allows_extra:
                    found.append(f"{path}{key}")
                continue
            found.extend(_ignored_keys(getattr(model, known[key]), value, f"{path}{key}."))
    elif isinstance(model, list) and isinstance(data, list):
        for i, (m, d) in enumerate(zip(model, data)):
            found.extend(_ignored_keys(m, d, f"{path.rstrip('.')}[{i}]."))
    elif isinstance(model, dict) and isinstance(data, dict):
        for key, value in data.items():
            if key in model:
                found.extend(_ignored_keys(model[key], value, f"{path}{key}."))
    return found


def load_model() -> Any:
    """``eval_protocol.models.EvaluationRow``, imported quietly: the package's own deprecation warnings (pydantic
    class-based config; reading its deprecated ``duration_seconds`` field back) are not about the file checked."""
    with warnings.catch_warnings(record=True):
        from eval_protocol.models import EvaluationRow
    warnings.simplefilter("ignore", DeprecationWarning)  # ahead of the "default" filter eval_protocol installs
    return EvaluationRow


def validate_file(path: str) -> tuple[int, list[str]]:
    """(number of rows checked, one message per failure) for one JSONL file."""
    from pydantic import ValidationError

    EvaluationRow = load_model()  # noqa: N806

    failures: list[str] = []
    checked = 0
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            where = f"{path}:{lineno}"
            try:
                text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as err:
                failures.append(f"{where}: not valid UTF-8 ({err.reason} at byte {err.start})")
                continue
            if not text.strip():
                continue
            checked += 1
            try:
                data = json.loads(text)
            except json.JSONDecodeError as err:
                failures.append(f"{where}: invalid JSON ({err.msg}, column {err.colno})")
                continue
            if not isinstance(data, dict):
                failures.append(f"{where}: expected a JSON object, got {type(data).__name__}")
                continue
            try:
                row = EvaluationRow.model_validate(data)
            except ValidationError as err:
                for problem in err.errors():
                    loc = ".".join(str(part) for part in problem["loc"]) or "(row)"
                    failures.append(f"{where}: {loc}: {problem['msg']}")
                continue
            for key in _ignored_keys(row, data):
                failures.append(f"{where}: {key}: not a field of the model (Eval Protocol would drop it)")
    return checked, failures


def main(argv: list[str]) -> int:
    if not argv or any(arg in ("-h", "--help") for arg in argv):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        load_model()
    except ImportError as err:
        print(f"ep_validate: cannot import eval_protocol ({err}); pip install eval-protocol", file=sys.stderr)
        return 2
    status = 0
    for path in argv:
        try:
            checked, failures = validate_file(path)
        except OSError as err:
            print(f"ep_validate: cannot read {path}: {err.strerror or err}", file=sys.stderr)
            return 2
        if checked == 0:
            print(f"{path}: no rows", file=sys.stderr)
            status = 1
        for message in failures[:MAX_ERRORS_SHOWN]:
            print(message, file=sys.stderr)
        if len(failures) > MAX_ERRORS_SHOWN:
            print(f"{path}: … and {len(failures) - MAX_ERRORS_SHOWN} more problems", file=sys.stderr)
        if failures:
            status = 1
            bad = len({m.split(": ", 1)[0] for m in failures})
            print(f"{path}: {bad} of {checked} rows invalid", file=sys.stderr)
        else:
            print(f"{path}: {checked} rows valid under eval_protocol.models.EvaluationRow")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
