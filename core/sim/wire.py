"""The simulator's knobs and its wire format: reading chat requests, writing OpenAI-shaped answers and errors.

Split out of :mod:`svgagent.core.sim.simulator` (which holds the server and its accounting) to keep modules small.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import math
import socket
import struct
import time
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from svgagent.core.scoring.models import JudgeMode
from svgagent.core.sim.content import GARBAGE_KINDS, QUALITIES, GarbageKind

FAULT_KINDS = (
    "reset", "timeout", "error_5xx", "rate_limit", "empty_choices", "judge_garbage", "policy_huge", "auth_rejected",
)  # fmt: skip
IMAGE_TOKENS = 255  # what one image adds to prompt_tokens


class SimConfig(BaseModel):
    """The simulator's knobs. Every ``*_every`` is 0 (never) or N (every N-th matching request)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = 0
    policy_latency_s: float = Field(0.0, ge=0)
    judge_latency_s: float = Field(0.0, ge=0)
    rate_limit_every: int = Field(0, ge=0)
    retry_after_s: float = Field(0.05, ge=0)  # sent as retry-after-ms and, rounded up to >= 1 s, Retry-After
    error_5xx_every: int = Field(0, ge=0)
    error_5xx_status: int = Field(500, ge=500, le=599)
    timeout_every: int = Field(0, ge=0)
    timeout_hang_s: float = Field(30.0, ge=0)  # a "timeout" request hangs this long, then answers (stop: drops it)
    reset_every: int = Field(0, ge=0)
    empty_choices_every: int = Field(0, ge=0)
    judge_pixel_analysis: bool = True  # False: judge from the PNG's compressed size (no decoding, ~0 CPU)
    judge_garbage_every: int = Field(0, ge=0)  # counts judge requests only
    judge_garbage_kinds: tuple[GarbageKind, ...] = Field(GARBAGE_KINDS, min_length=1)  # cycled in this order
    policy_huge_every: int = Field(0, ge=0)  # counts policy requests only
    huge_answer_bytes: int = Field(1_048_576, ge=1)
    # A file of SVGs, one JSON string a line: every policy answer draws the next of them, in turn (a model's larger
    # drawings in place of the simulator's small ones; bench/engine.py --svgs model-like). "" for the simulator's own.
    policy_svg_file: str = ""
    # Demo mode: answers follow the request's model and temperature, and models an RFT job trained draw better
    # (svgagent.core.sim.policy_skill); trained_models_file lists those (the demo world's). Off: the fixed mix.
    policy_follows_settings: bool = False
    trained_models_file: str = ""
    rejected_key: str = "rejected-key"
    policy_model: str = "simulated-policy"
    judge_model: str = "simulated-judge"


def empty_stats() -> dict[str, Any]:
    return {
        "total_requests": 0,
        "requests": {"policy": 0, "judge": 0, "models": 0},
        "by_prompt": {},
        "faults": {kind: 0 for kind in FAULT_KINDS},
        "in_flight": {"policy": 0, "judge": 0},
        "max_in_flight": {"policy": 0, "judge": 0},
        "policy_quality": {quality: 0 for quality in QUALITIES},
        "judge_mode": {mode.value: 0 for mode in JudgeMode},
        "judge_form": {},
    }


def pick_fault(config: SimConfig, number: int, kind: str, kind_number: int) -> str | None:
    """The fault for chat request ``number`` (1-based), the ``kind_number``-th of its kind; None for none."""
    for fault, every in (
        ("reset", config.reset_every),
        ("timeout", config.timeout_every),
        ("error_5xx", config.error_5xx_every),
        ("rate_limit", config.rate_limit_every),
        ("empty_choices", config.empty_choices_every),
    ):
        if every and number % every == 0:
            return fault
    if kind == "judge" and config.judge_garbage_every and kind_number % config.judge_garbage_every == 0:
        return "judge_garbage"
    if kind == "policy" and config.policy_huge_every and kind_number % config.policy_huge_every == 0:
        return "policy_huge"
    return None


# ------------------------------------------------------------------------------------------------- requests


def message_text(message: dict[str, Any]) -> tuple[str, int]:
    """(the text of one chat message, how many image parts it has)."""
    content = message.get("content")
    if isinstance(content, str):
        return content, 0
    texts, images = [], 0
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") in ("image_url", "input_image"):
                images += 1
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
    return "\n".join(texts), images


def image_bytes(messages: list[dict[str, Any]]) -> bytes:
    """The first image in the messages, decoded from its data URL (b"" when it is not a base64 data URL)."""
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if isinstance(part, dict) and part.get("type") == "image_url":
                image = part.get("image_url")
                url = image.get("url", "") if isinstance(image, dict) else str(image or "")
                if not (url.startswith("data:") and "," in url):
                    return b""
                try:
                    return base64.b64decode(url.split(",", 1)[1])
                except (binascii.Error, ValueError):
                    return b""
    return b""


def schema_name(body: dict[str, Any]) -> str:
    """``response_format.json_schema.name`` of a request, or ""."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
        return str(fmt["json_schema"].get("name", ""))
    return ""


def completion_limit(body: dict[str, Any]) -> int | None:
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None


# ------------------------------------------------------------------------------------------------ responses


def error_response(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"message": f"(simulated) {message}", "type": kind, "param": None, "code": None}}
    return web.json_response(body, status=status, headers=headers)


def rate_limit_response(config: SimConfig) -> web.Response:
    headers = {
        "Retry-After": str(max(1, math.ceil(config.retry_after_s))),
        "retry-after-ms": str(max(1, round(config.retry_after_s * 1000))),
    }
    return error_response(429, "rate limit reached for requests", "rate_limit_exceeded", headers)


def completion_response(
    number: int,
    model: str,
    contents: list[str],
    finish: list[str],
    texts: list[tuple[str, int]],
    limit: int | None,
    empty_choices: bool = False,
    cached_tokens: int = 0,
) -> web.Response:
    """A ``chat.completion`` body; answers longer than ``limit`` tokens (4 characters each) are cut there.
    ``cached_tokens`` of the prompt were served from the prompt cache (``usage.prompt_tokens_details``)."""
    if limit is not None:
        for i, text in enumerate(contents):
            if math.ceil(len(text) / 4) > limit:
                contents[i], finish[i] = text[: limit * 4], "length"
    prompt_tokens = sum(math.ceil(len(text) / 4) + images * IMAGE_TOKENS for text, images in texts)
    completion_tokens = sum(math.ceil(len(text) / 4) for text in contents)
    choices = [
        {"index": i, "message": {"role": "assistant", "content": text, "refusal": None}, "finish_reason": why}
        for i, (text, why) in enumerate(zip(contents, finish))
    ]
    payload = {
        "id": f"chatcmpl-sim-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "simulated",
        "choices": [] if empty_choices else choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": min(cached_tokens, prompt_tokens)},
        },
    }
    return web.Response(body=json.dumps(payload, ensure_ascii=False).encode("utf-8"), content_type="application/json")


def reset_connection(request: web.Request) -> None:
    """Drop the client's connection without an answer (a TCP reset where the platform allows it)."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:  # linger 0: closing sends a reset instead of a polite FIN
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()


# ------------------------------------------------------------------------------------------------------ CLI


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def arg_parser() -> argparse.ArgumentParser:
    """``--host``, ``--port`` and one option per SimConfig knob (``--policy-latency-s``, alias
    ``--policy-latency``; the garbage kinds comma-separated)."""
    parser = argparse.ArgumentParser(
        prog="python -m svgagent.core.sim.simulator",
        description="Run the simulated OpenAI-compatible policy + judge server (answers are labelled simulated).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--exit-on-stdin-eof",
        action="store_true",
        help="stop when stdin closes (a parent process that started it ended, however it ended)",
    )
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        metavar="N",
        help="lower this process's CPU priority by N before serving (a simulator on the app's own "
        "machine stands in for remote servers: it must not take the CPU the terminal UI needs)",
    )
    parser.add_argument(
        "--listen-fd",
        type=int,
        metavar="FD",
        help="serve on this inherited listening socket (bound to --host by the parent) instead of binding --port",
    )
    for name, field in SimConfig.model_fields.items():
        flags = [f"--{name.replace('_', '-')}"]
        if name.endswith("_s"):
            flags.append(f"--{name[:-2].replace('_', '-')}")
        if field.annotation is bool:
            parser.add_argument(*flags, dest=name, type=_flag, help=f"true/false (default {field.default})")
        elif field.annotation in (int, float, str):
            parser.add_argument(*flags, dest=name, type=field.annotation, help=f"default {field.default}")
        else:
            parser.add_argument(*flags, dest=name, help="comma-separated, e.g. non_json,schema")
    return parser


def config_from_args(args: argparse.Namespace) -> SimConfig:
    knobs = {name: getattr(args, name) for name in SimConfig.model_fields if getattr(args, name, None) is not None}
    if "judge_garbage_kinds" in knobs:
        knobs["judge_garbage_kinds"] = tuple(k.strip() for k in knobs["judge_garbage_kinds"].split(",") if k.strip())
    return SimConfig.model_validate(knobs)
