"""The SVG judge as a Fireworks evaluator: scores one rollout exactly as `svgagent eval` scores it.

This module is the entry file of the evaluator bundle that `svgagent rft create` builds (see svgagent's
`evaluator_bundle` module). The bundle holds copies of the same core modules `svgagent eval` uses
(extraction, the sandboxed renderer, the judge's prompt, schema and parsing, the shared models and errors) under
its own package name, plus `svgagent_bundle.json` with the judge settings captured at build time.

Scoring (the engine's rules, step by step, under the judge profile captured at build time — `judge_profile`,
svgagent's own by default; core/scoring/judge_profiles.py holds each profile's recipe):

0. once per process, render a trivial SVG: when that fails (libcairo, cairosvg or Chromium missing), raise
   `EvaluatorEnvironmentError` on every row instead of scoring;
1. extract the SVG from the answer; none found: a *valid* score of 0;
2. render it sandboxed (cairosvg worker processes, or headless Chromium with `renderer` = chromium: size cap,
   data:-only fetches, timeout, memory limit) at the profile's picture size; a render failure: a *valid* 0 (an
   *invalid* one under ep-quickstart);
3. ask the vision judge (the profile's question, response schema and reader; svgagent's: a count outside 0..N is
   unusable); score = fulfilled / N. A judge that gives no usable answer (svgbench: a valid 0), or cannot be
   reached: an *invalid* score.

`score_answer` / `score_answer_sync` / `score_row` are plain functions (no eval-protocol needed). When the
`eval-protocol` package is importable, `test_svgagent_judge` is also defined: the Eval Protocol pointwise
evaluation test Fireworks runs (entry point `test_svgagent_judge.py::test_svgagent_judge`); it reports an invalid
score as 0 with `is_score_valid=False`. The judge key is read from OPENAI_API_KEY (a Fireworks secret).

No `from __future__ import annotations` here on purpose: Eval Protocol checks the test's annotations by identity.
"""

import asyncio
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import openai

from svgagent.core.scoring.components import describe, rollout_components
from svgagent.core.scoring.endpoint import endpoint_client
from svgagent.core.scoring.errors import ConfigError, RenderError
from svgagent.core.scoring.extract import extract_svg
from svgagent.core.scoring.failures import classify, endpoint_errors
from svgagent.core.scoring.judge import Judge
from svgagent.core.scoring.judge_profiles import profile_named
from svgagent.core.scoring.models import JudgeMode
from svgagent.core.scoring.render import Renderer, usable_cpus
from svgagent.core.scoring.renderers import AnyRenderer, make_renderer

PACKAGE = "svgagent.core.scoring"  # the bundle renames this package; see _worker_path()
CONFIG_FILE = "svgagent_bundle.json"
SAMPLE_FILE = "sample.jsonl"
KEY_ENV = "OPENAI_API_KEY"
ENTRY_FUNCTION = "test_svgagent_judge"


@dataclass(frozen=True)
class JudgeConfig:
    """The settings that decide a score; the bundle captures them from the user's svgagent settings."""

    judge_model: str = "gpt-4.1"
    judge_base_url: str = "https://api.openai.com/v1"
    judge_mode: str = "count"
    judge_profile: str = "svgagent"  # whose recipe the score follows (core/scoring/judge_profiles.py)
    renderer: str = "cairosvg"  # or "chromium" (the bundle's Dockerfile installs it then)
    render_size: int = 512
    render_timeout_s: float = 20.0
    render_memory_mb: int = 1024
    request_timeout_s: float = 120.0
    max_retries: int = 3
    max_format_retries: int | None = None  # None: the judge profile's own
    # How rollouts are made (not part of the score): "single-turn" (eval-protocol calls the policy itself) or
    # "remote" (every rollout is an /init to the remote rollout server at remote_url, e.g. `svgagent serve`).
    rollouts: str = "single-turn"
    remote_url: str | None = None

    @classmethod
    def from_dict(cls, data: dict) -> "JudgeConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def load(cls, path: Path | None = None) -> "JudgeConfig":
        """The config written next to this file by the bundle builder (defaults when there is none)."""
        target = path or Path(__file__).resolve().with_name(CONFIG_FILE)
        if not target.is_file():
            return cls()
        return cls.from_dict(json.loads(target.read_text(encoding="utf-8")).get("config", {}))

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RolloutScore:
    """One rollout's score. `score` is None when it is not a valid measurement (judge outage / garbage)."""

    score: float | None
    is_score_valid: bool
    fulfilled: int | None
    total: int
    reason: str
    stage: str  # "extract", "render" or "judge": where the outcome was decided
    svg_found: bool = False
    rendered: bool = False
    verdicts: tuple = ()  # (index, fulfilled) per requirement, when the judge mode gives them

    @property
    def reward(self) -> float:
        """What the trainer receives: the score, or 0 for an invalid one."""
        return float(self.score) if self.is_score_valid and self.score is not None else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "verdicts": [list(v) for v in self.verdicts], "reward": self.reward}

    def metrics(self, answer: str | None, usage: Any = None) -> dict:
        """The parts that explain the score (core/scoring/components.py), as Eval Protocol metrics:
        name -> {score, is_score_valid, reason}; a part not known for this rollout is an invalid 0."""
        tokens = {name: _token_count(usage, name) for name in ("completion_tokens", "prompt_tokens")}
        parts = rollout_components(
            answer=answer,
            svg_found=self.svg_found,
            rendered=self.rendered,
            requirement_count=self.total,
            fulfilled=self.fulfilled,
            verdicts=self.verdicts,
            **tokens,
        )
        return {
            key: {
                "score": 0.0 if value is None else value,
                "is_score_valid": value is not None,
                "reason": describe(key, value),
            }
            for key, value in parts.items()
        }


def _token_count(usage: Any, name: str) -> int | None:
    value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


# ---- the sandboxed renderer, shared by every rollout of this process -------------------------------------------
_renderer_lock = threading.Lock()
_renderer: AnyRenderer | None = None
_renderer_problem: str | None = None  # set when the self-test render failed: the environment is broken
_renderer_tested = False
SELF_TEST_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="4" height="4"/></svg>'


def _worker_path() -> None:
    """Render workers run `<package>.render_worker` by module name; inside the bundle that package lives next to
    this file, so the bundle directory must be on the workers' PYTHONPATH."""
    root = Path(__file__).resolve().parent
    if not (root / PACKAGE).is_dir():
        return  # running from the installed svgagent package
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(root) not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(root), *parts])


def shared_renderer(config: JudgeConfig) -> AnyRenderer:
    global _renderer
    with _renderer_lock:
        if _renderer is None or _renderer.closed:
            _worker_path()
            _renderer = make_renderer(config, workers=min(4, usable_cpus()))
        return _renderer


def close_renderer() -> None:
    global _renderer, _renderer_tested, _renderer_problem
    with _renderer_lock:
        if _renderer is not None:
            _renderer.close()
            _renderer = None
        _renderer_tested, _renderer_problem = False, None


class EvaluatorEnvironmentError(RuntimeError):
    """This evaluator cannot score anything where it runs (e.g. the cairo library is missing). Raised on every row,
    the first one included, so the job stops with the reason instead of scoring every rollout 0."""


CAIRO_HINT = (
    "the system library libcairo (libcairo.so.2) must be installed where the evaluator runs (Debian/Ubuntu: "
    "apt-get install libcairo2; the bundle's Dockerfile installs it), together with the cairosvg package"
)


CHROMIUM_HINT = (
    "the evaluator renders with Chromium (renderer = chromium): the chromium package must be installed where it "
    "runs (Debian/Ubuntu: apt-get install chromium; the bundle's Dockerfile installs it)"
)


async def check_renderer(config: JudgeConfig) -> None:
    """Raise `EvaluatorEnvironmentError` unless a trivial SVG renders (checked once per process). A renderer that
    cannot start (cairosvg or libcairo missing) must not turn every rollout into a valid 0."""
    global _renderer_tested, _renderer_problem
    if not _renderer_tested:
        hint = CHROMIUM_HINT if config.renderer == "chromium" else CAIRO_HINT
        try:
            await shared_renderer(config).render(SELF_TEST_SVG, 8)
            _renderer_problem = None
        except (RenderError, ConfigError) as err:
            _renderer_problem = f"the evaluator cannot render SVG at all ({err}): {hint}"
        _renderer_tested = True
    if _renderer_problem is not None:
        raise EvaluatorEnvironmentError(_renderer_problem)


# ---- scoring ---------------------------------------------------------------------------------------------------
def _describe_judge_error(err: BaseException, config: JudgeConfig) -> str:
    return classify(
        err,
        "judge",
        config.judge_base_url,
        key_hint=f"the {KEY_ENV} secret",
        retries=config.max_retries,
        timeout_s=config.request_timeout_s,
    )[1]


def _invalid(total: int, reason: str, rendered: bool = False) -> RolloutScore:
    return RolloutScore(None, False, None, total, reason, "judge", svg_found=rendered, rendered=rendered)


async def score_answer(
    answer: str | None,
    requirements: Sequence[str],
    prompt: str | None = None,
    *,
    config: JudgeConfig | None = None,
    judge_client: openai.AsyncOpenAI | None = None,
    renderer: Renderer | Any | None = None,
) -> RolloutScore:
    """Score a policy answer against its numbered requirements (see the module docstring for the rules)."""
    cfg = config or JudgeConfig.load()
    profile = profile_named(cfg.judge_profile)  # the score's recipe: picture size, question, failure rules
    if renderer is None:
        await check_renderer(cfg)  # raises EvaluatorEnvironmentError: no score at all beats a wrong one
    reqs = [str(r) for r in requirements]
    total = len(reqs)
    if total == 0:
        return RolloutScore(None, False, None, 0, "the row has no requirements to judge", "extract")
    extracted = extract_svg(answer)
    if extracted.svg is None:
        return RolloutScore(0.0, True, 0, total, extracted.reason or "no SVG found in the answer", "extract")
    try:
        png = await (renderer or shared_renderer(cfg)).render(extracted.svg, profile.render_size(cfg.render_size))
    except RenderError as err:
        if not profile.render_failure_valid:  # ep-quickstart: an invalid 0
            return RolloutScore(None, False, None, total, f"render failed: {err}", "render", svg_found=True)
        return RolloutScore(0.0, True, 0, total, f"render failed: {err}", "render", svg_found=True)
    client = judge_client
    if client is None:
        key = os.environ.get(KEY_ENV, "").strip()
        if not key:
            return _invalid(
                total,
                f"{KEY_ENV} is not set in the evaluator: store the judge key as a Fireworks "
                "secret (svgagent rft create uploads it)",
                rendered=True,
            )
        client = endpoint_client(
            cfg.judge_base_url, key, timeout_s=cfg.request_timeout_s, max_retries=cfg.max_retries, connections=None
        )
    try:
        judge = Judge(client, cfg.judge_model, JudgeMode(cfg.judge_mode), cfg.max_format_retries, profile)
        verdict = await judge.judge(png, reqs, prompt)
    except endpoint_errors() as err:
        return _invalid(total, _describe_judge_error(err, cfg), rendered=True)
    finally:
        if judge_client is None:
            await client.close()
    verdicts = tuple((v.index, bool(v.fulfilled)) for v in verdict.verdicts or ())
    if verdict.valid and verdict.score is not None:
        return RolloutScore(
            verdict.score, True, verdict.fulfilled, total, verdict.rationale, "judge", True, True, verdicts
        )
    return _invalid(total, verdict.rationale, rendered=True)


def score_answer_sync(
    answer: str | None, requirements: Sequence[str], prompt: str | None = None, **kwargs: Any
) -> RolloutScore:
    """`score_answer` for callers without an event loop."""
    return asyncio.run(score_answer(answer, requirements, prompt, **kwargs))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return "" if content is None else str(content)


def rollout_inputs(messages: Sequence[Any], dataset_info: dict | None) -> tuple:
    """(answer, requirements, original prompt) from a rollout: the last assistant message and the row's info."""
    answer = ""
    for message in reversed(list(messages or [])):
        role = message.get("role") if isinstance(message, dict) else getattr(message, "role", None)
        if role == "assistant":
            content = message.get("content") if isinstance(message, dict) else getattr(message, "content", None)
            answer = _text(content)
            break
    info = dataset_info or {}
    return answer, list(info.get("requirements") or []), info.get("original_prompt")


async def score_row(row: dict, **kwargs: Any) -> RolloutScore:
    """Score an Eval Protocol row given as a dict (`messages` ending with the answer, `input_metadata`)."""
    info = ((row.get("input_metadata") or {}).get("dataset_info")) or {}
    answer, requirements, prompt = rollout_inputs(row.get("messages") or [], info)
    return await score_answer(answer, requirements, prompt, **kwargs)


# ---- the Eval Protocol evaluation test (only when eval-protocol is installed) --------------------------------
def _eval_protocol() -> dict | None:
    try:
        from eval_protocol.models import EvaluateResult, EvaluationRow, MetricResult
        from eval_protocol.pytest import evaluation_test
    except ImportError:
        return None
    processor = None
    config = JudgeConfig.load()
    try:
        if config.rollouts == "remote":  # as the quickstart does: model_base_url stays eval-protocol's default
            from eval_protocol.pytest import RemoteRolloutProcessor

            processor = RemoteRolloutProcessor(remote_base_url=config.remote_url)
        else:
            from eval_protocol.pytest import SingleTurnRolloutProcessor

            processor = SingleTurnRolloutProcessor()
    except ImportError:
        try:
            from eval_protocol.pytest import default_single_turn_rollout_processor as processor
        except ImportError:
            processor = None
    return {
        "EvaluateResult": EvaluateResult,
        "EvaluationRow": EvaluationRow,
        "MetricResult": MetricResult,
        "evaluation_test": evaluation_test,
        "processor": processor,
    }


def _define_evaluation_test(ep: dict) -> Any:
    EvaluationRow = ep["EvaluationRow"]
    EvaluateResult = ep["EvaluateResult"]
    MetricResult = ep["MetricResult"]
    # Local runs (`pytest test_svgagent_judge.py`) sample the policy with these; eval-protocol's own
    # `--ep-completion-params '{"model": "openai/m", "api_base": "http://127.0.0.1:8765/v1"}'` replaces them, and
    # `--ep-jsonl-path rows.jsonl` replaces the sample row.
    params = {"model": "fireworks_ai/accounts/fireworks/models/qwen3-0p6b", "temperature": 0.7, "max_tokens": 4096}
    options: dict = {
        "input_dataset": [str(Path(__file__).resolve().with_name(SAMPLE_FILE))],
        "completion_params": [params],
        "mode": "pointwise",
    }
    if ep["processor"] is not None:
        options["rollout_processor"] = ep["processor"]

    async def test_svgagent_judge(row: EvaluationRow) -> EvaluationRow:
        info = row.input_metadata.dataset_info if row.input_metadata is not None else None
        answer, requirements, prompt = rollout_inputs(row.messages, info)
        result = await score_answer(answer, requirements, prompt)
        counted = f"{result.fulfilled} of {result.total} requirements" if result.fulfilled is not None else "no count"
        usage = row.execution_metadata.usage if row.execution_metadata is not None else None
        metrics = {
            "requirements": MetricResult(
                score=result.reward, is_score_valid=result.is_score_valid, reason=f"{counted} ({result.stage})"
            )
        }
        for key, metric in result.metrics(answer, usage).items():  # the parts that explain the score
            metrics[key] = MetricResult(**metric)
        row.evaluation_result = EvaluateResult(
            score=result.reward, is_score_valid=result.is_score_valid, reason=result.reason, metrics=metrics
        )
        return row

    test_svgagent_judge.__name__ = test_svgagent_judge.__qualname__ = ENTRY_FUNCTION
    return ep["evaluation_test"](**options)(test_svgagent_judge)


_EP = _eval_protocol()
if _EP is not None:
    test_svgagent_judge = _define_evaluation_test(_EP)
