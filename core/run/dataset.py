"""Loading datasets of prompts with numbered visual requirements.

Three sources are understood, told apart by content rather than by file extension:

- ``None`` or ``"builtin"``: the dataset shipped with the package (``core/data/builtin.json``);
- an SVGBench ``questions.json``: a JSON array of ``{"prompt": str, "requirements": [str, ...]}``; the index is the
  identity (two entries may share a prompt), so row ids are ``row_<index>``;
- Eval Protocol JSON Lines: one row per line with ``input_metadata.row_id`` and
  ``input_metadata.dataset_info.{original_prompt, requirements}`` (evaluated rows exported by Eval Protocol have the
  same ``input_metadata`` and load too). Lines that are plain ``{"prompt", "requirements"}`` objects are accepted.

Every problem is raised as a :class:`DatasetError` with one line naming the file, the line or entry, and the problem.
Prompts and requirements are kept exactly as written (no stripping), so the formatted prompt stays byte-identical.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from svgagent.core.scoring.errors import DatasetError
from svgagent.core.scoring.models import DatasetRow

BUILTIN = "builtin"
MAX_DATASET_BYTES = 50 * 1024 * 1024

FORMAT_SVGBENCH = "svgbench"
FORMAT_JSONL = "eval-protocol-jsonl"


@dataclass(frozen=True, slots=True)
class Dataset:
    """A loaded dataset. ``source`` is what a run stores to find it again: ``"builtin"`` or an absolute path;
    ``sha256`` is the digest of the file's bytes, so a store can tell when the file changed."""

    name: str
    source: str
    rows: tuple[DatasetRow, ...]
    sha256: str
    format: str = FORMAT_SVGBENCH

    def __len__(self) -> int:
        return len(self.rows)


def is_builtin(source: str | Path | None) -> bool:
    return source is None or (isinstance(source, str) and source.strip() == BUILTIN)


def dataset_source(source: str | Path) -> str:
    """What a run stores to find the dataset ``source`` names again (:attr:`Dataset.source`): ``"builtin"``, or the
    file's absolute path."""
    return BUILTIN if is_builtin(source) else str(Path(source).expanduser().resolve())


def load_dataset(source: str | Path | None = None) -> Dataset:
    """Load the built-in dataset (``None`` or ``"builtin"``), an SVGBench ``questions.json`` or Eval Protocol JSONL."""
    if is_builtin(source):
        return _load_builtin()
    if not str(source).strip():
        raise DatasetError("dataset path is empty")
    path = Path(source).expanduser()
    data = _read_file(path)
    label = str(path)
    text = _decode(data, label)
    rows, fmt = _parse(text, label)
    return Dataset(
        name=path.name,
        source=dataset_source(path),
        rows=rows,
        sha256=hashlib.sha256(data).hexdigest(),
        format=fmt,
    )


def select_rows(dataset: Dataset, rows: int | None = None) -> list[DatasetRow]:
    """The first ``rows`` rows of ``dataset`` (all of them when ``rows`` is None or larger than the dataset)."""
    if rows is None:
        return list(dataset.rows)
    if isinstance(rows, bool) or not isinstance(rows, int):
        raise DatasetError(f"number of rows must be a whole number, got {rows!r}")
    if rows < 1:
        raise DatasetError(f"number of rows must be at least 1, got {rows}")
    return list(dataset.rows[:rows])


# --- reading -------------------------------------------------------------------------------------------------------


def _load_builtin() -> Dataset:
    resource = resources.files("svgagent.core").joinpath("data", "builtin.json")
    try:
        data = resource.read_bytes()
    except OSError as exc:
        raise DatasetError(f"built-in dataset is missing from the installed package ({exc.strerror or exc})") from None
    label = "built-in dataset"
    rows, fmt = _parse(_decode(data, label), label)
    return Dataset(name=BUILTIN, source=BUILTIN, rows=rows, sha256=hashlib.sha256(data).hexdigest(), format=fmt)


def _read_file(path: Path) -> bytes:
    try:
        if not path.exists():
            raise DatasetError(f"{path}: dataset file not found")
        if path.is_dir():
            raise DatasetError(f"{path}: is a directory, expected a dataset file")
        size = path.stat().st_size
        if size > MAX_DATASET_BYTES:
            raise DatasetError(
                f"{path}: file too large ({size / 1024 / 1024:.1f} MB, limit {MAX_DATASET_BYTES // 1024 // 1024} MB)"
            )
        with path.open("rb") as handle:
            data = handle.read(MAX_DATASET_BYTES + 1)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read dataset file ({exc.strerror or exc})") from None
    if len(data) > MAX_DATASET_BYTES:  # grew between stat and read, or not a regular file
        raise DatasetError(f"{path}: file too large (limit {MAX_DATASET_BYTES // 1024 // 1024} MB)")
    return data


def _decode(data: bytes, label: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DatasetError(f"{label}: line {line}: not valid UTF-8 (byte offset {exc.start})") from None


def _parse(text: str, label: str) -> tuple[tuple[DatasetRow, ...], str]:
    stripped = text.lstrip()
    if not stripped:
        raise DatasetError(f"{label}: empty dataset (the file has no content)")
    if stripped[0] == "[":
        return _parse_svgbench(text, label), FORMAT_SVGBENCH
    if stripped[0] == "{":
        return _parse_jsonl(text, label), FORMAT_JSONL
    raise DatasetError(
        f"{label}: unrecognised format: expected a JSON array of {{prompt, requirements}} (SVGBench questions.json) "
        "or Eval Protocol JSON Lines"
    )


def _parse_svgbench(text: str, label: str) -> tuple[DatasetRow, ...]:
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{label}: line {exc.lineno}: invalid JSON ({exc.msg}, column {exc.colno})") from None
    if not isinstance(items, list):
        raise DatasetError(f"{label}: expected a JSON array of {{prompt, requirements}} objects")
    if not items:
        raise DatasetError(f"{label}: empty dataset (the array has no entries)")
    rows = []
    for index, item in enumerate(items):
        where = f"{label}: entry {index}"
        if not isinstance(item, dict):
            raise DatasetError(f"{where}: expected an object with 'prompt' and 'requirements', got {_kind(item)}")
        prompt = _prompt(item, "prompt", where)
        requirements = _requirements(item, "requirements", where)
        rows.append(DatasetRow(index=index, row_id=f"row_{index}", prompt=prompt, requirements=requirements))
    return tuple(rows)


def _parse_jsonl(text: str, label: str) -> tuple[DatasetRow, ...]:
    rows: list[DatasetRow] = []
    seen: dict[str, int] = {}
    # Split on "\n" only: str.splitlines would also split on U+2028 and friends, which JSON allows inside strings.
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.strip()
        if not line:
            continue
        where = f"{label}: line {lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            if not rows and _is_single_object(text):
                raise DatasetError(
                    f"{label}: holds a single multi-line JSON object; expected JSON Lines (one row per line) "
                    "or a JSON array"
                ) from None
            raise DatasetError(f"{where}: invalid JSON ({exc.msg}, column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise DatasetError(f"{where}: expected a JSON object, got {_kind(obj)}")
        index = len(rows)
        row_id, prompt, requirements = _jsonl_fields(obj, index, where)
        if row_id in seen:
            raise DatasetError(f"{where}: duplicate row_id {row_id!r} (first seen on line {seen[row_id]})")
        seen[row_id] = lineno
        rows.append(DatasetRow(index=index, row_id=row_id, prompt=prompt, requirements=requirements))
    if not rows:
        raise DatasetError(f"{label}: empty dataset (no rows)")
    return tuple(rows)


def _jsonl_fields(obj: dict[str, Any], index: int, where: str) -> tuple[str, str, tuple[str, ...]]:
    if "input_metadata" not in obj and "prompt" in obj:
        return f"row_{index}", _prompt(obj, "prompt", where), _requirements(obj, "requirements", where)
    meta = obj.get("input_metadata")
    if not isinstance(meta, dict):
        problem = "missing" if meta is None else f"not an object ({_kind(meta)})"
        raise DatasetError(f"{where}: input_metadata is {problem}")
    row_id = meta.get("row_id")
    if row_id is None:
        row_id = f"row_{index}"
    elif not isinstance(row_id, str) or not row_id.strip():
        raise DatasetError(f"{where}: input_metadata.row_id must be a non-empty string, got {row_id!r}")
    info = meta.get("dataset_info")
    if not isinstance(info, dict):
        problem = "missing" if info is None else f"not an object ({_kind(info)})"
        raise DatasetError(f"{where}: input_metadata.dataset_info is {problem}")
    prefix = "input_metadata.dataset_info."
    prompt = _prompt(info, "original_prompt", where, prefix)
    requirements = _requirements(info, "requirements", where, prefix)
    return row_id, prompt, requirements


# --- field checks --------------------------------------------------------------------------------------------------


def _prompt(obj: dict[str, Any], key: str, where: str, prefix: str = "") -> str:
    if key not in obj:
        raise DatasetError(f"{where}: missing '{prefix}{key}'")
    value = obj[key]
    if not isinstance(value, str):
        raise DatasetError(f"{where}: '{prefix}{key}' must be a string, got {_kind(value)}")
    if not value.strip():
        raise DatasetError(f"{where}: '{prefix}{key}' is empty")
    return value


def _requirements(obj: dict[str, Any], key: str, where: str, prefix: str = "") -> tuple[str, ...]:
    if key not in obj:
        raise DatasetError(f"{where}: missing '{prefix}{key}'")
    value = obj[key]
    if not isinstance(value, list):
        raise DatasetError(f"{where}: '{prefix}{key}' must be a list of strings, got {_kind(value)}")
    if not value:
        raise DatasetError(f"{where}: '{prefix}{key}' is empty (at least one requirement is needed)")
    for number, requirement in enumerate(value, start=1):
        if not isinstance(requirement, str):
            raise DatasetError(f"{where}: requirement {number} must be a string, got {_kind(requirement)}")
        if not requirement.strip():
            raise DatasetError(f"{where}: requirement {number} is empty")
    return tuple(value)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)


def _is_single_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except json.JSONDecodeError:
        return False
