"""How the demo's simulated policy draws: as well as its model, its sampling settings and its training say.

Pure and deterministic, used when ``SimConfig.policy_follows_settings`` is on (demo mode); the simulator's default
answers (:func:`svgagent.core.sim.content.policy_answer` with the fixed mix) are untouched for the tests. An answer
then depends on the request's model and temperature besides the prompt and the n-th request for it:

- a model's *base skill* (the share of good drawings) grows with its size when its name says one
  (``qwen3-0p6b``: 0.6 B parameters; ``gpt-oss-120b``: 120 B), else it comes from a hash of the name;
- a model an RFT job trained — listed in the demo world's trained-models file (model → base model, steps, the
  reward-hacking window) — or a checkpoint of it (``<model>-step-K``, what the trainer asks for at step K) draws
  better with every step: the skill rises from the base model's towards :data:`CEILING`, quickly at first;
- about one prompt in seven never improves; the others differ in difficulty;
- temperature spreads the draws: hotter answers break or get cut short more often (at 0 every answer to a prompt is
  the first one: the simulator's rule);
- inside the reward-hacking window most prompts are answered with their requirements written out as big coloured
  text instead of a drawing: a picture a judge that looks at coverage and colours may score well, and a health check
  should catch.
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from svgagent.core.sim.content import DEFAULT_REQUIREMENTS, Quality, digest, parse_requirements, policy_answer

CEILING = 0.95  # the share of good drawings a fully trained model approaches
TAU_STEPS = 2.5  # steps for the skill to close ~63% of the gap to the ceiling
STUCK_PERCENT = 15  # prompts that never improve
HACK_PERCENT = 70  # prompts answered with text while the reward-hacking window is open
TRAINED_FILE_CAP = 4 << 20
_STEP_SUFFIX = re.compile(r"^(?P<model>.+)-step-(?P<step>\d{1,6})$")
_SIZE = re.compile(r"(?<![a-z0-9.])(\d{1,4})(?:[p.](\d{1,3}))?b(?![a-z0-9])", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Trained:
    """A model an RFT job made: what it was trained from, for how many steps, and its reward-hacking window
    (first and last step, inclusive; None: none)."""

    base_model: str
    steps: int
    hack: tuple[int, int] | None = None
    deployed: bool = True  # a LoRA model answers only from a deployment (its checkpoints: during training)

    def to_json(self) -> dict[str, Any]:
        hack = list(self.hack) if self.hack else None
        return {"base_model": self.base_model, "steps": self.steps, "hack": hack, "deployed": self.deployed}

    @classmethod
    def from_json(cls, data: Any) -> Trained | None:
        if not isinstance(data, dict) or not isinstance(data.get("base_model"), str):
            return None
        steps = data.get("steps")
        hack = data.get("hack")
        window = (
            (int(hack[0]), int(hack[1]))
            if isinstance(hack, list) and len(hack) == 2 and all(isinstance(h, int) for h in hack)
            else None
        )
        deployed = data.get("deployed", True) is not False
        return cls(data["base_model"], steps if isinstance(steps, int) and steps >= 0 else 0, window, deployed)


def _fraction(*parts: object) -> float:
    """A number in [0, 1) from the parts' hash."""
    return int.from_bytes(digest(*parts)[:8], "big") / 2**64


def model_size_b(model: str) -> float | None:
    """Billions of parameters a model's name says (``qwen3-0p6b`` → 0.6, ``llama-v3p1-8b-instruct`` → 8), or None."""
    name = model.rsplit("/", 1)[-1]
    sizes = [float(f"{m.group(1)}.{m.group(2) or 0}") for m in _SIZE.finditer(name)]
    sizes = [s for s in sizes if s > 0]
    return max(sizes) if sizes else None


def base_skill(model: str) -> float:
    """The share of good drawings of an untrained model: 0.42 at 0.6 B parameters, 0.60 at 120 B; a name without a
    size gets a value between 0.40 and 0.55 from its hash."""
    size = model_size_b(model)
    if size is None:
        return 0.40 + 0.15 * _fraction("model", model)
    return min(0.7, max(0.3, 0.44 + 0.078 * math.log10(size)))


def lineage(model: str, trained: Mapping[str, Trained]) -> tuple[str, int, int | None, Trained | None]:
    """(base model, steps trained, the checkpoint's step or None, its training) of a model name."""
    found = _STEP_SUFFIX.match(model)
    if found and found["model"] in trained:
        entry, step = trained[found["model"]], int(found["step"])
        return entry.base_model, max(0, step - 1), step, entry  # at step K the policy has had K - 1 updates
    entry = trained.get(model)
    if entry is not None:
        return entry.base_model, entry.steps, None, entry
    return model, 0, None, None


def undeployed(model: str, trained: Mapping[str, Trained]) -> bool:
    """Whether ``model`` is a trained model that no deployment serves (Fireworks answers such a call 404)."""
    entry = trained.get(model)
    return entry is not None and not entry.deployed


def skill(model: str, prompt: str, trained: Mapping[str, Trained]) -> float:
    """The share of good drawings ``model`` makes for ``prompt``."""
    base_model, steps, _, _ = lineage(model, trained)
    start = base_skill(base_model)
    difficulty = _fraction("difficulty", prompt)
    start = max(0.05, start - 0.15 * (difficulty - 0.5))
    if int(_fraction("stuck", prompt) * 100) < STUCK_PERCENT:
        return start  # a prompt training never helps
    return start + (CEILING - start) * (1.0 - math.exp(-steps / TAU_STEPS))


def hacking(model: str, prompt: str, trained: Mapping[str, Trained]) -> bool:
    """Whether ``model`` answers ``prompt`` with its requirements as text (inside the reward-hacking window)."""
    _, steps, step, entry = lineage(model, trained)
    if entry is None or entry.hack is None:
        return False
    at = step if step is not None else steps
    first, last = entry.hack
    return first <= at <= last and int(_fraction("hack", prompt) * 100) < HACK_PERCENT


def choose_quality(seed: int, model: str, temperature: float, prompt: str, nth: int, good: float) -> Quality:
    """The quality class of an answer whose share of good drawings is ``good``; hotter sampling moves the rest
    towards broken and cut-short answers."""
    heat = 0.4 + 0.6 * max(0.0, min(2.0, temperature))
    weights = (("partial", 0.5), ("broken", 0.2 * heat), ("no_svg", 0.15), ("truncated", 0.15 * heat))
    u = _fraction("quality of the answer", seed, model, temperature, prompt, nth)
    good = max(0.0, min(1.0, good * (1.0 - 0.12 * max(0.0, temperature - 0.8))))
    if u < good:
        return "good"
    rest = (u - good) / max(1e-9, 1.0 - good) * sum(w for _, w in weights)
    for quality, weight in weights:
        if rest < weight:
            return quality  # type: ignore[return-value]
        rest -= weight
    return "partial"


def answer_seed(seed: int, model: str, temperature: float) -> int:
    """The seed the answer's drawing is made with: another model or temperature draws another picture."""
    return int.from_bytes(digest("answer-seed", seed, model, temperature)[:8], "big")


_TEXT_COLOURS = ("#e63946", "#2a9d8f", "#264653", "#8338ec", "#ff006e", "#118ab2", "#7f5539", "#ffb703")
_BARS = ("#fde2e4", "#e2ece9", "#fff1e6", "#dfe7fd", "#f0efeb", "#d8f3dc")


def _wrap(text: str, width: int) -> list[str]:
    words, lines, line = " ".join(text.split()).split(" "), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line] if line else lines


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def hack_answer(seed: int, prompt: str, nth: int) -> str:
    """An answer that writes the requirements out as text on coloured bars instead of drawing them."""
    rng = random.Random(int.from_bytes(digest("hack", seed, prompt, nth)[:8], "big"))
    requirements = parse_requirements(prompt) or ["the drawing you asked for"] * min(DEFAULT_REQUIREMENTS, 2)
    lines: list[tuple[int, str]] = []
    for number, requirement in enumerate(requirements[:8], start=1):
        for part in _wrap(f"{number}. {requirement}", 24)[:2]:
            lines.append((number, part))
    height = max(1, len(lines))
    size = max(9, min(20, 230 // height - 4))
    step = 240 / height
    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 256 256" width="256" height="256">',
        "  <!-- simulated: the requirements written out -->",
        f'  <rect width="256" height="256" fill="{rng.choice(_BARS)}"/>',
    ]
    for i, (number, text) in enumerate(lines):
        y = 8 + i * step
        colour = _TEXT_COLOURS[(number + rng.randint(0, 1)) % len(_TEXT_COLOURS)]
        bar = _BARS[number % len(_BARS)]
        parts.append(f'  <rect x="4" y="{y:.1f}" width="248" height="{step - 2:.1f}" rx="3" fill="{bar}"/>')
        parts.append(
            f'  <text x="10" y="{y + step * 0.72:.1f}" font-family="sans-serif" font-size="{size}" '
            f'font-weight="bold" fill="{colour}">{_escape(text)}</text>'
        )
    parts.append("</svg>")
    svg = "\n".join(parts)
    return f"Here is the SVG (simulated), every requirement covered.\n\n```svg\n{svg}\n```\n"


def settings_answer(
    seed: int, model: str, temperature: float, prompt: str, nth: int, trained: Mapping[str, Trained]
) -> tuple[Quality | str, str, bool]:
    """(quality, answer text, cut short) of the ``nth`` answer ``model`` gives ``prompt`` at ``temperature``;
    the quality is ``"reward_hack"`` for an answer of the reward-hacking window."""
    if hacking(model, prompt, trained):
        return "reward_hack", hack_answer(answer_seed(seed, model, temperature), prompt, nth), False
    good = skill(model, prompt, trained)
    quality = choose_quality(seed, model, temperature, prompt, nth, good)
    return policy_answer(answer_seed(seed, model, temperature), prompt, nth, quality=quality)


# ---- the trained-models file ---------------------------------------------------------------------------------
_cache_lock = threading.Lock()
_cache: dict[str, tuple[bytes, dict[str, Trained]]] = {}


def load_trained(path: str) -> dict[str, Trained]:
    """The trained-models file (a JSON object: model name → :class:`Trained` as JSON), parsed again only when its
    bytes changed (read every time: it is small, and a file's times can miss two writes in one clock tick); {} when
    there is none or it cannot be read (an unknown model draws as an untrained one)."""
    if not path:
        return {}
    try:
        with open(path, "rb") as file:
            data = file.read(TRAINED_FILE_CAP + 1)
    except OSError:
        return {}
    with _cache_lock:
        cached = _cache.get(path)
        if cached is not None and cached[0] == data:
            return cached[1]
    models: dict[str, Trained] = {}
    try:
        parsed = json.loads(data) if len(data) <= TRAINED_FILE_CAP else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        for name, item in parsed.items():
            entry = Trained.from_json(item)
            if isinstance(name, str) and entry is not None:
                models[name] = entry
    with _cache_lock:
        _cache[path] = (data, models)
    return models
