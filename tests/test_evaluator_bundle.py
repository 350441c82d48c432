"""The evaluator bundle: generated from the core sources, deterministic, and scoring exactly like the engine.

The parity test runs the engine on real rollouts (policy and judge: the project's OpenAI simulator), uploads the
bundle through a launch against the simulated Fireworks control plane, takes the archive the simulator received,
unpacks it and runs its plain scoring function in a separate interpreter on the engine's answers.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from svgagent.core.config.settings import load_settings
from svgagent.core.demo import demo_overrides
from svgagent.core.rft import bundle_entry
from svgagent.core.rft.evaluator_bundle import (
    BUNDLE_PACKAGE,
    ENTRY_FILE,
    ENTRY_POINT,
    REQUIREMENTS,
    RFT_DIR,
    SCORING_DIR,
    SOURCE_MODULES,
    BundleError,
    _check_imports,
    archive_members,
    build_bundle,
    config_from_settings,
    unpack_archive,
)
from svgagent.core.rft.fireworks_api import ControlPlane
from svgagent.core.rft.launch import LaunchRequest, launch, prepare_launch
from svgagent.core.rft.params import RftParams
from svgagent.core.run.dataset import load_dataset
from svgagent.core.run.engine import Engine
from svgagent.core.scoring.render import Renderer
from svgagent.core.sim.control_plane import FireworksSim
from svgagent.core.sim.simulator import Simulator
from svgagent.core.store.run_store import Store

EP_INSTALLED = importlib.util.find_spec("eval_protocol") is not None

SCORE_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import test_svgagent_judge as entry
cases = json.load(sys.stdin)
out = [entry.score_answer_sync(c["answer"], c["requirements"], c["prompt"]).to_dict() for c in cases]
entry.close_renderer()
print(json.dumps({
    "scores": out,
    "svgagent_modules": sorted(m for m in sys.modules if m.split(".")[0] == "svgagent"),
    "eval_protocol_loaded": "eval_protocol" in sys.modules,
    "has_ep_test": hasattr(entry, "test_svgagent_judge"),
    "entry_file": entry.__file__,
}))
"""


def test_bundle_is_deterministic_and_generated_from_the_sources() -> None:
    one, two = build_bundle(), build_bundle()
    assert one.archive == two.archive
    assert one.code_hash == two.code_hash
    assert one.evaluator_id == f"svgagent-judge-{one.code_hash[:12]}"
    assert len(one.evaluator_id) <= 63
    assert one.entry_point == ENTRY_POINT == "test_svgagent_judge.py::test_svgagent_judge"
    # laid out as `ep upload` packs a project: every file under one top-level folder, uploaded as <folder>.tar.gz
    assert one.root == one.evaluator_id
    assert one.filename == f"{one.root}.tar.gz"
    assert archive_members(one.archive) == {f"{one.root}/{path}": data for path, data in one.files.items()}
    assert ENTRY_POINT.split("::")[0] in one.files
    assert "Dockerfile" in one.files
    for module in SOURCE_MODULES:  # byte-for-byte copies, package renamed
        source = (SCORING_DIR / f"{module}.py").read_text(encoding="utf-8")
        copied = one.files[f"{BUNDLE_PACKAGE}/{module}.py"].decode()
        assert copied == source.replace("svgagent.core.scoring", BUNDLE_PACKAGE)
        assert "svgagent.core" not in copied
    entry = (RFT_DIR / "bundle_entry.py").read_text(encoding="utf-8")
    assert one.files[ENTRY_FILE].decode() == entry.replace("svgagent.core.scoring", BUNDLE_PACKAGE)
    requirements = one.files["requirements.txt"].decode().split()
    for name in ("eval-protocol", "openai", "httpx2", "cairosvg", "pillow", "pydantic"):
        assert any(r.split(">")[0].split("[")[0] == name for r in requirements), name
    assert "eval-protocol>=0.2.85" in requirements  # the quickstart's floor
    assert all(">=" in r for r in requirements), requirements  # every requirement has a floor
    assert one.requirements == one.files["requirements.txt"].decode()
    manifest = json.loads(one.files["svgagent_bundle.json"])
    assert manifest["entry_point"] == ENTRY_POINT
    assert set(manifest["sources"]) >= {"core/scoring/judge.py", "core/scoring/extract.py"}
    # the judge settings are part of the code: another judge gives another evaluator
    other = build_bundle(config={**one.config, "judge_model": "another-judge"})
    assert other.code_hash != one.code_hash
    assert other.evaluator_id != one.evaluator_id


def test_bundle_requires_what_its_code_imports() -> None:
    """requirements.txt names every third-party package the bundled code imports, and nothing it does not."""
    import ast

    imported = set()
    for name, data in build_bundle().files.items():
        if name.endswith(".py"):
            for node in ast.walk(ast.parse(data)):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    imported.add(node.module.split(".")[0])
    distributions = {"PIL": "pillow", "eval_protocol": "eval-protocol"}
    third_party = {
        distributions.get(module, module)
        for module in imported
        if module not in sys.stdlib_module_names and module != BUNDLE_PACKAGE
    }
    required = {requirement.split(">")[0].split("[")[0] for requirement in REQUIREMENTS}
    assert third_party <= required, third_party - required
    assert required == third_party, required - third_party


def test_bundle_code_runs_on_python_3_10(tmp_path: Path) -> None:
    """eval-protocol supports Python 3.10, so the bundle's code must too: vermin (a minimum-version checker) over
    every bundled .py file, annotations evaluated (pydantic and dataclasses read them at run time)."""
    bundle = build_bundle(out_dir=tmp_path / "bundle")
    py_files = sorted(str(tmp_path / "bundle" / p) for p in bundle.files if p.endswith(".py"))
    assert len(py_files) == len(SOURCE_MODULES) + 2  # the kernel's copies, the package's __init__, the entry file
    vermin = Path(sys.executable).with_name("vermin")
    proc = subprocess.run(
        [
            str(vermin),
            "--target=3.10-",
            "--violations",
            "--eval-annotations",
            "--no-tips",
            "--no-parse-comments",
            *py_files,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # what vermin cannot see: interpreter flags in command lines (`python -P` is 3.11+)
    for path in py_files:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        flags = {
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in ("-P", "PYTHONSAFEPATH")
        }
        assert not flags, (path, flags)


def test_build_refuses_an_import_the_bundle_does_not_hold() -> None:
    _check_imports("ok.py", "from svgjudge.models import JudgeMode\nfrom .errors import RenderError\nimport openai\n")
    for bad in (
        "from svgjudge.policy import generate",
        "from .settings import Settings",
        "from svgagent.tui import cli",
        "import svgjudge.store",
    ):
        with pytest.raises(BundleError, match="does not contain"):
            _check_imports("bad.py", bad)


def test_entry_defines_the_ep_test_only_with_eval_protocol() -> None:
    if EP_INSTALLED:
        pytest.skip("eval-protocol is installed in this environment")
    assert importlib.util.find_spec("eval_protocol") is None
    assert not hasattr(bundle_entry, "test_svgagent_judge")  # the plain functions need no eval-protocol
    assert callable(bundle_entry.score_answer)
    assert callable(bundle_entry.score_row)


def test_rollout_inputs_take_the_last_assistant_answer() -> None:
    messages = [
        {"role": "user", "content": "draw"},
        {"role": "assistant", "content": "first"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": [{"type": "text", "text": "```svg\n<svg/>"}, {"type": "x"}]},
    ]
    info = {"requirements": ["a", "b"], "original_prompt": "p"}
    assert bundle_entry.rollout_inputs(messages, info) == ("```svg\n<svg/>", ["a", "b"], "p")
    assert bundle_entry.rollout_inputs([{"role": "user", "content": "x"}], None) == ("", [], None)


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    with Renderer(size=256, workers=1) as r:
        yield r


async def test_invalid_scores_when_the_judge_cannot_answer(renderer: Renderer, monkeypatch: pytest.MonkeyPatch) -> None:
    svg_answer = '```svg\n<svg viewBox="0 0 10 10"><rect width="10" height="10" fill="red"/></svg>\n```'
    no_svg = await bundle_entry.score_answer("I cannot draw", ["red"], renderer=renderer)
    assert (no_svg.score, no_svg.is_score_valid, no_svg.stage) == (0.0, True, "extract")
    broken = await bundle_entry.score_answer('<svg width="-5" height="10"></svg>', ["red"], renderer=renderer)
    assert (broken.score, broken.is_score_valid, broken.stage) == (0.0, True, "render")
    assert broken.reason.startswith("render failed: ")
    assert "negative" in broken.reason
    missing = await bundle_entry.score_answer(svg_answer, ["red"], renderer=renderer)
    assert not missing.is_score_valid
    assert missing.reward == 0.0
    assert "OPENAI_API_KEY" in missing.reason
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    cfg = bundle_entry.JudgeConfig(judge_base_url=f"http://127.0.0.1:{closed}/v1", max_retries=0, render_size=256)
    down = await bundle_entry.score_answer(svg_answer, ["red"], config=cfg, renderer=renderer)
    assert not down.is_score_valid
    assert down.score is None
    assert "unreachable" in down.reason
    empty = await bundle_entry.score_answer(svg_answer, [], renderer=renderer)
    assert not empty.is_score_valid


def test_bundle_dockerfile_installs_the_system_libraries_pip_cannot() -> None:
    dockerfile = build_bundle().files["Dockerfile"].decode()
    lines = [line.strip() for line in dockerfile.splitlines() if line.strip() and not line.startswith("#")]
    assert lines[0].startswith("FROM python:3.")
    install = " ".join(line for line in lines if "apt-get install" in line or line.startswith("&&"))
    assert "libcairo2" in install
    assert "fonts-" in install
    assert any(line.startswith("RUN pip install") and "requirements.txt" in line for line in lines)


def _shadow_cairo(folder: Path) -> Path:
    """A `cairocffi` that fails to import exactly as the real one does when libcairo.so.2 is not installed."""
    (folder / "cairocffi").mkdir(parents=True)
    (folder / "cairocffi" / "__init__.py").write_text(
        'raise OSError("no library called \\"cairo-2\\" was found\\n'
        "cannot load library 'libcairo.so.2': libcairo.so.2: cannot open shared object file\")\n"
    )
    return folder


async def test_evaluator_without_libcairo_fails_loudly_on_the_first_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the render workers inherit PYTHONPATH: they import the broken cairocffi, as on an image without libcairo2
    monkeypatch.setenv("PYTHONPATH", str(_shadow_cairo(tmp_path / "shadow")))
    bundle_entry.close_renderer()
    try:
        svg = '<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"><rect width="4" height="4"/></svg>'
        for answer in (f"```svg\n{svg}\n```", "no picture at all"):  # every row, the first one included
            with pytest.raises(bundle_entry.EvaluatorEnvironmentError, match="libcairo") as caught:
                await bundle_entry.score_answer(answer, ["a"])
            assert "libcairo.so.2" in str(caught.value)
            assert "apt-get install libcairo2" in str(caught.value)
    finally:
        bundle_entry.close_renderer()


async def test_uploaded_bundle_scores_exactly_like_the_engine(tmp_path: Path) -> None:
    with Simulator() as sim:
        settings = load_settings(
            **demo_overrides(sim.base_url),
            store=tmp_path / "runs.db",
            rows=8,
            render_size=256,
            max_retries=1,
            request_timeout_s=10,
        )
        store = Store(settings.store_path())
        async with Engine(settings, store, use_cache=False) as engine:
            run_id = engine.create_run(load_dataset("builtin"))
            # the engine scores a stored answer as it is (resume path): plant answers that fail to render
            planted = [
                '```svg\n<svg width="-5" height="10"></svg>\n```',
                '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
                '<image xlink:href="file:///etc/passwd" width="9" height="9"/></svg>',
            ]
            for rec, answer in zip(store.list_rollouts(run_id), planted):
                store.update_rollout(rec.rollout_id, raw_answer=answer, finish_reason="stop")
            await engine.run(run_id)
        rollouts = store.list_rollouts(run_id, heavy=True)
        store.close()
        assert {r.status.value for r in rollouts} >= {"scored"}

        # launch against the simulated control plane; take the archive it received
        with FireworksSim() as fw:
            request = LaunchRequest(
                params=RftParams(base_model="qwen3-0p6b"),
                rows=2,
                fireworks_api_key="fw-test-key",
                openai_api_key="sk-test-key",
                judge_config=config_from_settings(settings),
                base_url=fw.base_url,
                evaluator_poll_s=0.001,
                dataset_poll_s=0.001,
                max_retries=0,
            )
            prepared = prepare_launch(request)
            with ControlPlane("fw-test-key", base_url=fw.base_url, max_retries=0) as cp:
                launch(prepared, cp)
            archive = fw.evaluator_archive(prepared.evaluator_id)
        assert archive == prepared.bundle.archive
        bundle_dir = unpack_archive(archive, tmp_path / "bundle")
        assert bundle_dir == tmp_path / "bundle" / prepared.bundle.root
        assert json.loads((bundle_dir / "svgagent_bundle.json").read_text())["config"]["judge_base_url"] == sim.base_url

        cases = [{"answer": r.raw_answer, "requirements": list(r.requirements), "prompt": r.prompt} for r in rollouts]
        env = {**os.environ, "OPENAI_API_KEY": "sk-test-key"}
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(
            [sys.executable, "-c", SCORE_SCRIPT, str(bundle_dir)],
            input=json.dumps(cases),
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)

    assert result["svgagent_modules"] == []  # the bundle is self-contained
    assert Path(result["entry_file"]).parent == bundle_dir.resolve()
    assert result["eval_protocol_loaded"] is EP_INSTALLED
    assert result["has_ep_test"] is EP_INSTALLED
    stages = set()
    for rollout, scored in zip(rollouts, result["scores"], strict=True):
        stages.add(scored["stage"])
        assert scored["is_score_valid"] == bool(rollout.is_score_valid), rollout.rollout_id
        assert scored["score"] == rollout.score, (rollout.rollout_id, scored, rollout.reason)
        assert scored["fulfilled"] == rollout.fulfilled
        assert scored["total"] == rollout.total == len(rollout.requirements)
    assert stages == {"extract", "render", "judge"}, stages
