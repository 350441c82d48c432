"""The evaluator bundle: the judge packaged as a `.tar.gz` Fireworks builds and runs during RFT.

Generated at build time from the same source files `svgagent eval` runs, so there is one source of truth:

    test_svgagent_judge.py   entry: a copy of core/rft/bundle_entry.py (the plain scoring function + the Eval Protocol
                             pointwise test, entry point `test_svgagent_judge.py::test_svgagent_judge`)
    svgjudge/                copies of core/scoring/{errors,models,components,extract,render_guard,render_path,render_worker,
                             render,chat,judge}.py
    svgagent_bundle.json     the judge settings captured from the user's settings, and the sources' digests
    sample.jsonl             one Eval Protocol row, so `pytest test_svgagent_judge.py` runs locally
    requirements.txt         eval-protocol, openai, cairosvg, pillow, pydantic, ... (each with a floor)
    Dockerfile               the system libraries pip cannot install: libcairo2 and the font set (what `ep local-test`
                             builds)
    README.md

The archive is laid out as eval-protocol's `ep upload` packs a project: every file under one top-level folder (the
project's directory name; here the evaluator id), the entry point relative to inside that folder, and the upload
named `<folder>.tar.gz`. The code runs on Python 3.10, eval-protocol's floor (checked by a test with vermin).

The copies are the source files byte for byte except for one mechanical rename: the package `svgagent.core`
becomes `svgjudge` (imports and the render worker's module name). The build checks that every import of the
package names a bundled module, so a core change that needs another module fails the build, not the evaluator.

The code hash is a SHA-256 over every file's path and bytes; the archive is deterministic (sorted entries, fixed
times and owners), so the same code always gives the same hash, archive and evaluator id
(`svgagent-judge-<first 12 hex digits>`), and a re-run reuses the evaluator Fireworks already built.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from svgagent.core.named_files import write_output
from svgagent.core.run.prompt import ep_row
from svgagent.core.scoring.errors import SvgAgentError
from svgagent.core.scoring.judge_profiles import recipe_line
from svgagent.core.scoring.models import DatasetRow

if TYPE_CHECKING:
    from svgagent.core.config.settings import Settings

RFT_DIR = Path(__file__).resolve().parent
SCORING_DIR = RFT_DIR.parent / "scoring"
SOURCE_PACKAGE = "svgagent.core.scoring"
BUNDLE_PACKAGE = "svgjudge"
SOURCE_MODULES = (
    "errors",
    "models",
    "components",
    "extract",
    "picture_size",
    "render_guard",
    "render_path",
    "render_prep",
    "render_worker",
    "render",
    "chromium_page",
    "chromium_browser",
    "chromium",
    "renderers",
    "endpoint",
    "failures",
    "chat",
    "judge_forms",
    "judge_profiles",
    "judge",
)
TEMPLATE_MODULE = "bundle_entry"
ENTRY_FILE = "test_svgagent_judge.py"
ENTRY_FUNCTION = "test_svgagent_judge"
ENTRY_POINT = f"{ENTRY_FILE}::{ENTRY_FUNCTION}"
CONFIG_FILE = "svgagent_bundle.json"
SAMPLE_FILE = "sample.jsonl"
EVALUATOR_PREFIX = "svgagent-judge"
DISPLAY_NAME = "svgagent SVG judge"
DESCRIPTION = "Renders the policy's SVG in a sandbox and asks a vision LLM how many numbered requirements it meets"
# Every requirement has a floor; eval-protocol's is the one the SVGAgent quickstart pins (without its `svgbench` extra,
# which only adds selenium: this judge renders with cairosvg).
REQUIREMENTS = (
    "eval-protocol>=0.2.85",
    # the judge's client: openai on httpx2 (core/scoring/endpoint.py); eval-protocol's litellm pins openai < 3, whose
    # httpx2 support is the extra
    "openai[httpx2]>=2.54",
    "httpx2>=2.12,<3",
    "cairosvg>=2.9.1,<3",  # 2.9.1: path data before its first command no longer loops (docs/cairosvg-closepath-hang.md)
    "defusedxml>=0.7",
    "pillow>=9.1",
    "pydantic>=2.7",
)
# The fonts text is drawn with (issue 26): the same Debian packages as the app's render environment (.ci/run, README),
# so `sans-serif`, `serif` and `monospace` resolve to the same faces in `svgagent eval` and in the RFT evaluator.
FONT_PACKAGES = ("fonts-dejavu-core", "fonts-liberation", "fonts-noto-core")
CHROMIUM_PACKAGES = ("chromium",)  # the renderer "chromium" draws through Debian's headless Chromium


def dockerfile(config: Mapping[str, Any]) -> str:
    """The image the evaluator runs in: the system libraries pip cannot install (libcairo, the font set, and
    Chromium when the bundle renders with it)."""
    packages = ["libcairo2", "fontconfig", *FONT_PACKAGES]
    if config.get("renderer") == "chromium":
        packages += CHROMIUM_PACKAGES
    return f"""\
# The system libraries the evaluator needs and pip cannot install: libcairo (cairosvg loads libcairo.so.2) and the
# font set SVG <text> is drawn with (the same as svgagent's own render environment), and Chromium when the evaluator
# renders with it. `ep local-test` builds this image and runs the evaluation test in it with the project mounted at
# /workspace; without them the evaluator stops on its first row with an error naming what is missing.
FROM python:3.11-slim
RUN apt-get update \\
    && apt-get install -y --no-install-recommends {" ".join(packages)} \\
    && rm -rf /var/lib/apt/lists/*
WORKDIR /workspace
COPY requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir -r /tmp/requirements.txt
"""


DOCKERFILE = dockerfile({})  # the default (cairosvg) image
CONFIG_FIELDS = (
    "judge_model",
    "judge_base_url",
    "judge_mode",
    "judge_profile",
    "renderer",
    "render_size",
    "render_timeout_s",
    "render_memory_mb",
    "request_timeout_s",
    "max_retries",
)
_FIXED_MTIME = 315_532_800  # 1980-01-01, as wheels use: archives do not depend on when they were built
_SAMPLE_ROW = DatasetRow(
    index=0,
    row_id="sample_0",
    prompt="A red circle centred on a white background.",
    requirements=(
        "There is exactly one circle.",
        "The circle is red.",
        "The circle is centred.",
        "The background is white.",
    ),
)


class BundleError(SvgAgentError):
    """The bundle cannot be built (a bundled module imports something the bundle does not hold)."""


@dataclass(frozen=True)
class EvaluatorBundle:
    """A built bundle: its files (relative path -> bytes), the .tar.gz archive and its identity."""

    files: Mapping[str, bytes]
    archive: bytes
    code_hash: str
    config: Mapping[str, Any]
    entry_point: str = ENTRY_POINT
    requirements: str = "\n".join(REQUIREMENTS) + "\n"
    directory: Path | None = field(default=None, compare=False)

    @property
    def short_hash(self) -> str:
        return self.code_hash[:12]

    @property
    def evaluator_id(self) -> str:
        return f"{EVALUATOR_PREFIX}-{self.short_hash}"

    @property
    def root(self) -> str:
        """The archive's top-level folder (eval-protocol packs a project under its directory name)."""
        return self.evaluator_id

    @property
    def filename(self) -> str:
        """The upload's name, `<folder>.tar.gz` as `ep upload` names it."""
        return f"{self.root}.tar.gz"


def config_from_settings(settings: Settings) -> dict[str, Any]:
    """The judge settings the evaluator needs, from a `Settings` (no keys: those travel as Fireworks secrets)."""
    out: dict[str, Any] = {}
    for name in CONFIG_FIELDS:
        value = getattr(settings, name)
        out[name] = getattr(value, "value", value)  # JudgeMode -> "count", JudgeProfileName -> "svgagent"
    return out


def _rename(source: str) -> str:
    return source.replace(SOURCE_PACKAGE, BUNDLE_PACKAGE)


def _check_imports(name: str, source: str) -> None:
    """Every import of the bundle package (absolute or relative) must name a bundled module."""
    tree = ast.parse(source, filename=name)
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.split(".")[0] == BUNDLE_PACKAGE]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 1:
                targets = [f"{BUNDLE_PACKAGE}.{node.module}"] if node.module else []
            elif node.level > 1:
                raise BundleError(
                    f"{name}: relative import beyond the bundled package ({'.' * node.level}{node.module or ''})"
                )
            elif node.module and node.module.split(".")[0] == BUNDLE_PACKAGE:
                targets = [node.module]
            elif node.module and node.module.split(".")[0] == "svgagent":
                targets = [node.module]
        for target in targets:
            parts = target.split(".")
            if parts[0] != BUNDLE_PACKAGE or len(parts) != 2 or parts[1] not in SOURCE_MODULES:
                raise BundleError(
                    f"{name} imports {target}, which the evaluator bundle does not contain: add it to "
                    "SOURCE_MODULES in core/rft/evaluator_bundle.py or drop the import"
                )


def _source(module: str, folder: Path = SCORING_DIR) -> bytes:
    path = folder / f"{module}.py"
    try:
        return path.read_bytes()
    except OSError as err:
        raise BundleError(f"cannot read {path} for the evaluator bundle ({err.strerror or err})") from None


def _readme(config: Mapping[str, Any]) -> str:
    return (
        "# svgagent SVG judge (evaluator bundle)\n\n"
        "Generated by `svgagent rft create`; do not edit: rebuild instead.\n\n"
        f"Entry point: `{ENTRY_POINT}` (an Eval Protocol pointwise evaluation test).\n"
        "Plain scoring without eval-protocol:\n\n"
        "```python\n"
        "from test_svgagent_judge import score_answer_sync\n"
        "print(score_answer_sync(answer_text, requirements, prompt).to_dict())\n"
        "```\n\n"
        f"Judge: `{config.get('judge_model')}` at `{config.get('judge_base_url')}`, mode "
        f"`{config.get('judge_mode')}`, profile `{config.get('judge_profile', 'svgagent')}` "
        f"({recipe_line(str(config.get('judge_profile', 'svgagent')))}), drawn by "
        f"`{config.get('renderer', 'cairosvg')}` (PNG longest side {config.get('render_size')} px where the profile "
        "sizes by it). The key is read from OPENAI_API_KEY.\n\n"
        "Besides the score, each result's `metrics` hold the parts that explain it (svgjudge/components.py): "
        "`svg_found`, `rendered`, `requirement_count`, `fulfilled`, `answer_chars`, `completion_tokens`, "
        "`prompt_tokens`, and `requirement_K` per requirement in per-requirement mode.\n"
    )


def bundle_files(config: Mapping[str, Any]) -> dict[str, bytes]:
    """The bundle's files (relative path -> bytes), generated from the current core sources."""
    files: dict[str, bytes] = {}
    digests: dict[str, str] = {}
    for module in SOURCE_MODULES:
        raw = _source(module)
        digests[f"core/scoring/{module}.py"] = hashlib.sha256(raw).hexdigest()
        text = _rename(raw.decode("utf-8"))
        _check_imports(f"{BUNDLE_PACKAGE}/{module}.py", text)
        files[f"{BUNDLE_PACKAGE}/{module}.py"] = text.encode("utf-8")
    files[f"{BUNDLE_PACKAGE}/__init__.py"] = (
        b'"""Copies of the svgagent core modules that score a rollout (generated; do not edit)."""\n'
    )
    raw = _source(TEMPLATE_MODULE, RFT_DIR)
    digests[f"core/rft/{TEMPLATE_MODULE}.py"] = hashlib.sha256(raw).hexdigest()
    entry = _rename(raw.decode("utf-8"))
    _check_imports(ENTRY_FILE, entry)
    files[ENTRY_FILE] = entry.encode("utf-8")
    manifest = {"entry_point": ENTRY_POINT, "config": dict(config), "sources": digests}
    files[CONFIG_FILE] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")
    files[SAMPLE_FILE] = (json.dumps(ep_row(_SAMPLE_ROW), ensure_ascii=False) + "\n").encode("utf-8")
    files["requirements.txt"] = ("\n".join(REQUIREMENTS) + "\n").encode("utf-8")
    files["Dockerfile"] = dockerfile(config).encode("utf-8")
    files["README.md"] = _readme(config).encode("utf-8")
    return dict(sorted(files.items()))


def code_hash(files: Mapping[str, bytes]) -> str:
    """SHA-256 over every file's path, size and bytes, in path order."""
    digest = hashlib.sha256()
    for path in sorted(files):
        data = files[path]
        digest.update(path.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
    return digest.hexdigest()


def _tar_info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = _FIXED_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o644
    return info


def archive_files(files: Mapping[str, bytes], root: str) -> bytes:
    """A deterministic .tar.gz of `files`, each under the folder `root` (as `ep upload` packs a project: file
    entries only, named relative to the project's parent directory)."""
    if not root or "/" in root or root in (".", ".."):
        raise BundleError(f"the archive's top-level folder must be a plain name, got {root!r}")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            tar.addfile(_tar_info(f"{root}/{path}", len(files[path])), io.BytesIO(files[path]))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", fileobj=out, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def write_files(files: Mapping[str, bytes], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for path, data in files.items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        write_output(target, data)
    return directory


def build_bundle(
    settings: Settings | None = None, *, config: Mapping[str, Any] | None = None, out_dir: Path | None = None
) -> EvaluatorBundle:
    """Build the bundle from the current sources. The judge settings come from `config`, else `settings`, else
    the defaults of `svgagent.core.config.settings.Settings`. With `out_dir` the bundle directory is written there."""
    if config is None:
        if settings is None:
            from svgagent.core.config.settings import Settings

            settings = Settings.model_construct()  # defaults only: no files or environment read
        config = config_from_settings(settings)
    files = bundle_files(config)
    digest = code_hash(files)
    archive = archive_files(files, f"{EVALUATOR_PREFIX}-{digest[:12]}")
    directory = write_files(files, Path(out_dir)) if out_dir is not None else None
    return EvaluatorBundle(files=files, archive=archive, code_hash=digest, config=dict(config), directory=directory)


def unpack_archive(archive: bytes, directory: Path) -> Path:
    """Unpack a bundle archive into `directory` (refusing links and paths outside it); returns the project folder
    (the archive's single top-level folder)."""
    directory.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        roots = {member.name.split("/", 1)[0] for member in tar.getmembers()}
        if len(roots) != 1:
            raise BundleError(f"a bundle archive holds one top-level folder, this one has {len(roots)}")
        tar.extractall(directory, filter="data")
    return directory / roots.pop()


def archive_members(archive: bytes) -> dict[str, bytes]:
    """The regular files of a bundle archive (path in the archive, top-level folder included -> bytes)."""
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for member in tar.getmembers():
            if member.isfile():
                handle = tar.extractfile(member)
                out[member.name] = handle.read() if handle else b""
    return out
