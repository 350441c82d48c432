"""A loopback OpenAI-compatible server that plays both the policy and the judge, with injectable faults.

Used by the tests, the benchmarks and the app's ``--demo`` mode, so nothing needs an API key::

    with Simulator(SimConfig(seed=7, policy_latency_s=0.01)) as sim:
        client = openai.AsyncOpenAI(base_url=sim.base_url, api_key="anything")
        ...
        sim.configure(rate_limit_every=3)      # knobs change at run time, from any thread
        sim.stats()["max_in_flight"]["policy"]

or as its own process (so it does not share a GIL with the engine)::

    python -m svgagent.core.sim.simulator --port 8765 --policy-latency 0.2 --judge-latency 0.2

Endpoints: ``GET /v1/models``, ``POST /v1/chat/completions`` (both need ``Authorization: Bearer <key>``; the key
``SimConfig.rejected_key`` gets 401), and for remote control ``GET|POST /_sim/config``, ``GET /_sim/stats``,
``POST /_sim/reset_stats`` (no auth). A chat request is a *judge* request when any message has an ``image_url``
content part, otherwise a *policy* request — the model name does not matter.

Faults (every ``*_every`` knob: 0 = never, N = every N-th request) are scheduled on a counter of chat requests;
``judge_garbage_every`` counts judge requests only and ``policy_huge_every`` policy requests only. When several
knobs hit the same request the first of reset, timeout, 5xx, 429, empty choices wins.

Answers are labelled as simulated (model names ``simulated-policy`` / ``simulated-judge``, an SVG comment,
a ``[simulated judge]`` prefix) and are deterministic: see :mod:`svgagent.core.sim.content`. The k-th policy
request for a prompt gets the k-th answer in that prompt's sequence (``temperature=0``: always the first one);
``max_tokens`` / ``max_completion_tokens`` cut the answer (``finish_reason="length"``); ``n`` up to 16 is honoured;
``stream=true`` is refused with 400. The judge answers in the form whose schema ``response_format`` names (looked
up in :mod:`svgagent.core.scoring.judge_forms`, as the judge reads it), from the PNG's coverage and colour variety
plus a hash of its bytes.

(Over 400 lines: the policy and judge handlers share one fault schedule, one in-flight gate and one stats lock;
what they answer lives in :mod:`svgagent.core.sim.content`, the wire shapes in :mod:`svgagent.core.sim.wire`.)
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import os
import signal
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from svgagent.core.event_loop import run as run_on_fast_loop
from svgagent.core.scoring.judge_forms import form_named
from svgagent.core.scoring.models import JudgeMode
from svgagent.core.server_socket import listen
from svgagent.core.sim.background import BackgroundLoop, BackgroundServer
from svgagent.core.sim.content import Quality, judge_answer, parse_requirements, policy_answer, prompt_key, svgs_of_file
from svgagent.core.sim.policy_skill import load_trained, settings_answer, undeployed
from svgagent.core.sim.wire import (
    FAULT_KINDS,
    SimConfig,
    arg_parser,
    completion_limit,
    completion_response,
    config_from_args,
    empty_stats,
    error_response,
    image_bytes,
    message_text,
    pick_fault,
    rate_limit_response,
    reset_connection,
    schema_name,
)

__all__ = ["FAULT_KINDS", "SimConfig", "Simulator", "main"]

MAX_CACHED_PREFIXES = 4096  # the simulator's prompt cache (prefix hashes) before it starts again
CACHE_BLOCK_CHARS = 512  # a provider caches a prompt's prefix in blocks (OpenAI's: 128 tokens, 4 characters each)
CACHE_MIN_CHARS = 4096  # and only a prompt of 1,024 tokens or more


class Simulator(BackgroundServer):
    """The simulated OpenAI-compatible server (see the module docstring)."""

    def __init__(self, config: SimConfig | None = None, **knobs: Any) -> None:
        base = config or SimConfig()
        self._config = SimConfig.model_validate({**base.model_dump(), **knobs}) if knobs else base
        self._lock = threading.Lock()
        self._in_flight_changed = threading.Condition(self._lock)
        self._open: asyncio.Event | None = None  # cleared by hold(): chat requests wait, counted as in flight
        self._stats = empty_stats()
        self._chat_count = 0
        self._kind_count = {"policy": 0, "judge": 0}
        self._prompt_seq: dict[str, int] = {}
        self._prefixes: set[int] = set()  # the prompt cache: hashes of the prompt prefixes of requests served
        self._svg_file: tuple[str, list[str], itertools.count] | None = None  # SimConfig.policy_svg_file, read
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._background = BackgroundLoop("svgagent-simulator")
        self.base_url: str | None = None

    # ------------------------------------------------------------------------------------------- knobs, stats

    @property
    def config(self) -> SimConfig:
        return self._config

    def configure(self, **changes: Any) -> SimConfig:
        """Change knobs (validated; thread-safe); returns the new config."""
        with self._lock:
            self._config = SimConfig.model_validate({**self._config.model_dump(), **changes})
            return self._config

    def stats(self) -> dict[str, Any]:
        """A snapshot: total_requests, requests{policy,judge,models}, by_prompt{hash: {policy, judge}},
        faults{kind: n}, in_flight{policy,judge}, max_in_flight{policy,judge}, policy_quality{class: n},
        judge_mode{mode: n}, judge_form{schema name: n}."""
        with self._lock:
            return copy.deepcopy(self._stats)

    def hold(self) -> None:
        """From now on, chat requests wait (counted as in flight) until :meth:`release`: tests drive concurrency
        with events instead of latencies. Takes effect before it returns."""
        self._set_gate(open_=False)

    def release(self) -> None:
        """Let every held request (and any later one) go on."""
        self._set_gate(open_=True)

    def _set_gate(self, *, open_: bool) -> None:
        gate, loop = self._open, self._background.loop
        if gate is None:
            raise RuntimeError("the simulator is not running")

        async def flip() -> None:
            gate.set() if open_ else gate.clear()

        if loop is not None and self._background.on_other_thread():
            asyncio.run_coroutine_threadsafe(flip(), loop).result()
        else:  # serving on the caller's own loop (start_async)
            gate.set() if open_ else gate.clear()

    def wait_for_in_flight(self, kind: str, count: int, timeout_s: float = 30.0) -> bool:
        """Block until ``count`` requests of ``kind`` ("policy"/"judge") are in flight; False after ``timeout_s``
        (a guard against hangs, not a measurement)."""
        with self._in_flight_changed:
            return self._in_flight_changed.wait_for(lambda: self._stats["in_flight"][kind] >= count, timeout_s)

    def reset_stats(self) -> None:
        """Zero every counter, including the fault schedule; in-flight requests stay counted as in flight.
        The per-prompt answer sequence (which answer a prompt gets next) is kept."""
        with self._lock:
            in_flight = dict(self._stats["in_flight"])
            self._stats = empty_stats()
            self._stats["in_flight"] = in_flight
            self._stats["max_in_flight"] = dict(in_flight)
            self._chat_count = 0
            self._kind_count = {"policy": 0, "judge": 0}

    # ------------------------------------------------------------------------------------------------ serving

    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/v1/models", self._handle_models)
        app.router.add_post("/v1/chat/completions", self._handle_chat)
        app.router.add_get("/_sim/config", self._handle_get_config)
        app.router.add_post("/_sim/config", self._handle_set_config)
        app.router.add_get("/_sim/stats", self._handle_stats)
        app.router.add_post("/_sim/reset_stats", self._handle_reset_stats)
        return app

    async def _serve(self, host: str, port: int, sock: socket.socket | None = None) -> str:
        if self._runner is not None:
            raise RuntimeError("the simulator is already running")
        self._stopping = asyncio.Event()
        self._open = asyncio.Event()
        self._open.set()
        # Judge requests decode their PNG in these threads while the simulated latency elapses.
        self._executor = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1), thread_name_prefix="sim-judge")
        # handler_cancellation: a request whose client went away (e.g. timed out) stops being "in flight".
        runner = web.AppRunner(self._make_app(), handler_cancellation=True, shutdown_timeout=1.0, access_log=None)
        await runner.setup()
        try:
            bound_port = await listen(runner, host, port, sock)
        except BaseException:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise
        self._runner = runner
        self.base_url = f"http://{host}:{bound_port}/v1"
        return self.base_url

    async def _shutdown(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    async def start_async(self, host: str = "127.0.0.1", port: int = 0, sock: socket.socket | None = None) -> str:
        """Serve on the running loop (on ``sock`` when given: a listening socket bound to ``host``); returns the base
        URL (``http://127.0.0.1:PORT/v1``)."""
        return await self._serve(host, port, sock)

    async def stop_async(self) -> None:
        await self._shutdown()

    async def __aenter__(self) -> Simulator:
        await self.start_async()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()

    # ----------------------------------------------------------------------------------------------- handlers

    def _auth_failure(self, request: web.Request, config: SimConfig) -> web.Response | None:
        header = request.headers.get("Authorization", "")
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            return error_response(401, "missing bearer token in the Authorization header", "invalid_request_error")
        if key.strip() == config.rejected_key:
            with self._lock:
                self._stats["faults"]["auth_rejected"] += 1
            return error_response(401, "incorrect API key provided", "invalid_request_error")
        return None

    async def _handle_models(self, request: web.Request) -> web.Response:
        config = self._config
        with self._lock:
            self._stats["total_requests"] += 1
            self._stats["requests"]["models"] += 1
        failure = self._auth_failure(request, config)
        if failure is not None:
            return failure
        created = 1_700_000_000
        data = [
            {"id": config.policy_model, "object": "model", "created": created, "owned_by": "svgagent-simulator"},
            {"id": config.judge_model, "object": "model", "created": created, "owned_by": "svgagent-simulator"},
        ]
        return web.json_response({"object": "list", "data": data})

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        config = self._config
        with self._lock:
            self._stats["total_requests"] += 1
        try:
            body = await request.json()
        except ValueError:  # JSONDecodeError and UnicodeDecodeError
            return error_response(400, "the request body is not JSON", "invalid_request_error")
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            return error_response(400, "'messages' must be a non-empty list of objects", "invalid_request_error")
        failure = self._auth_failure(request, config)
        if failure is not None:
            return failure
        if body.get("stream"):
            return error_response(400, "streaming is not supported by the simulator", "invalid_request_error")

        texts = [message_text(m) for m in messages]
        kind = "judge" if any(images for _, images in texts) else "policy"
        if kind == "judge":
            prompt = next(text for text, images in texts if images)
        else:
            user_texts = [text for (text, _), m in zip(texts, messages) if m.get("role") == "user"]
            prompt = user_texts[-1] if user_texts else texts[-1][0]
        key = prompt_key(prompt)

        with self._lock:
            stats = self._stats
            stats["requests"][kind] += 1
            stats["by_prompt"].setdefault(key, {"policy": 0, "judge": 0})[kind] += 1
            stats["in_flight"][kind] += 1
            stats["max_in_flight"][kind] = max(stats["max_in_flight"][kind], stats["in_flight"][kind])
            self._chat_count += 1
            number = self._chat_count
            self._kind_count[kind] += 1
            fault = pick_fault(config, number, kind, self._kind_count[kind])
            if fault is not None:
                stats["faults"][fault] += 1
            self._in_flight_changed.notify_all()
        try:
            if self._open is not None and not self._open.is_set():
                await self._open.wait()  # held (see hold())
            return await self._answer(request, body, config, kind, prompt, texts, fault, number)
        finally:
            with self._lock:
                self._stats["in_flight"][kind] = max(0, self._stats["in_flight"][kind] - 1)
                self._in_flight_changed.notify_all()

    async def _answer(
        self,
        request: web.Request,
        body: dict[str, Any],
        config: SimConfig,
        kind: str,
        prompt: str,
        texts: list[tuple[str, int]],
        fault: str | None,
        number: int,
    ) -> web.StreamResponse:
        if fault == "reset":
            reset_connection(request)
            raise asyncio.CancelledError  # the connection is gone: nothing more is sent
        if fault == "timeout":
            assert self._stopping is not None
            try:
                await asyncio.wait_for(self._stopping.wait(), timeout=config.timeout_hang_s)
            except TimeoutError:
                pass  # hung long enough: answer after all
            else:  # the simulator is stopping: drop the connection rather than answer
                reset_connection(request)
                raise asyncio.CancelledError
        if fault == "error_5xx":
            message = "the server had an error while processing your request"
            return error_response(config.error_5xx_status, message, "server_error")
        if fault == "rate_limit":
            return rate_limit_response(config)

        count = body.get("n") or 1
        if not isinstance(count, int) or not 1 <= count <= 16:
            return error_response(400, "'n' must be an integer from 1 to 16", "invalid_request_error")
        if kind == "policy" and config.policy_follows_settings:
            model = str(body.get("model") or "")
            if undeployed(model, load_trained(config.trained_models_file)):
                message = f"Model not found, inaccessible, and/or not deployed: {model[:200]} (deploy it first)"
                return error_response(404, message, "not_found_error")
        # A model's latency runs from the request: the answer is made while it elapses and sent when it is over (made
        # after it, a burst of answers due at the same moment went out one after another, each late by the making
        # of those before it: ~75 ms for 256 at once, on the cores of the engine it answers).
        loop = asyncio.get_running_loop()
        if kind == "judge":
            due = loop.time() + config.judge_latency_s
            contents, finish = await self._judge_contents(body, config, prompt, fault)
            contents, finish, model = contents * count, finish * count, config.judge_model
        else:
            due = loop.time() + config.policy_latency_s
            contents, finish = self._policy_contents(body, config, prompt, fault, count)
            model = config.policy_model
        response = completion_response(
            number,
            model,
            contents,
            finish,
            texts,
            completion_limit(body),
            empty_choices=fault == "empty_choices",
            cached_tokens=self._cached_tokens(texts),
        )
        if due > loop.time():
            await asyncio.sleep(due - loop.time())
        return response

    def _cached_tokens(self, texts: list[tuple[str, int]]) -> int:
        """The prompt's tokens a provider's prompt cache would serve, as OpenAI's does: none below
        :data:`CACHE_MIN_CHARS`; above, its leading blocks of :data:`CACHE_BLOCK_CHARS` characters that began an
        earlier request (never the last block). This request's blocks are then remembered (a bounded set: full, it
        starts again). svgagent's own prompts are shorter: a long shared preamble in the dataset is what caches."""
        text = "\n".join(t for t, _ in texts)
        if len(text) < CACHE_MIN_CHARS:
            return 0
        blocks = range(CACHE_BLOCK_CHARS, len(text), CACHE_BLOCK_CHARS)
        hashes = [hash(text[:end]) for end in blocks]
        with self._lock:
            seen = next((i for i in range(len(hashes), 0, -1) if hashes[i - 1] in self._prefixes), 0)
            if len(self._prefixes) > MAX_CACHED_PREFIXES:
                self._prefixes.clear()
            self._prefixes.update(hashes)
        return seen * CACHE_BLOCK_CHARS // 4

    def _policy_contents(
        self, body: dict[str, Any], config: SimConfig, prompt: str, fault: str | None, count: int
    ) -> tuple[list[str], list[str]]:
        temperature = body.get("temperature", 1.0)
        follow = config.policy_follows_settings
        model = str(body.get("model") or "")
        heat = (
            float(temperature) if isinstance(temperature, (int, float)) and not isinstance(temperature, bool) else 1.0
        )
        contents, finish = [], []
        for _ in range(count):
            key = prompt_key(f"{model}\n{heat!r}\n{prompt}" if follow else prompt)
            with self._lock:
                seq = self._prompt_seq.get(key, 0)
                self._prompt_seq[key] = seq + 1
            nth = 0 if temperature == 0 else seq
            huge = config.huge_answer_bytes if fault == "policy_huge" else 0
            if config.policy_svg_file and not huge:
                quality, text, cut = self._given_svg(config.policy_svg_file)
            elif follow and not huge:
                trained = load_trained(config.trained_models_file)
                quality, text, cut = settings_answer(config.seed, model, heat, prompt, nth, trained)
            else:
                quality, text, cut = policy_answer(config.seed, prompt, nth, huge_bytes=huge)
            with self._lock:
                counts = self._stats["policy_quality"]
                counts[quality] = counts.get(quality, 0) + 1
            contents.append(text)
            finish.append("length" if cut else "stop")
        return contents, finish

    def _given_svg(self, path: str) -> tuple[Quality, str, bool]:
        """The next SVG of ``path`` (SimConfig.policy_svg_file) as a good answer."""
        with self._lock:
            if self._svg_file is None or self._svg_file[0] != path:
                self._svg_file = (path, svgs_of_file(path), itertools.count())
            _, svgs, turn = self._svg_file
            svg = svgs[next(turn) % len(svgs)]
        return "good", f"Here is the SVG (simulated).\n\n```svg\n{svg}\n```\n", False

    async def _judge_contents(
        self, body: dict[str, Any], config: SimConfig, prompt: str, fault: str | None
    ) -> tuple[list[str], list[str]]:
        form = form_named(schema_name(body))  # the answer form the request asks for (svgagent's count form if none)
        mode = JudgeMode.PER_REQUIREMENT if form.kind == "verdicts" else JudgeMode.COUNT
        garbage = None
        with self._lock:
            self._stats["judge_mode"][mode.value] += 1
            self._stats["judge_form"][form.name] = self._stats["judge_form"].get(form.name, 0) + 1
            if fault == "judge_garbage":
                kinds = config.judge_garbage_kinds
                garbage = kinds[(self._stats["faults"]["judge_garbage"] - 1) % len(kinds)]
        requirements = parse_requirements(prompt)
        png = image_bytes(body["messages"])
        if config.judge_pixel_analysis:  # decoding the image takes milliseconds: in a thread, not on the loop
            text = await asyncio.get_running_loop().run_in_executor(
                self._executor, judge_answer, config.seed, png, requirements, form, garbage, True
            )
        else:  # an estimate from the PNG's header and size: tens of µs
            text = judge_answer(config.seed, png, requirements, form, garbage, False)
        return [text], ["stop"]

    # ------------------------------------------------------------------------------------------ remote control

    async def _handle_get_config(self, request: web.Request) -> web.Response:
        return web.json_response(self._config.model_dump(mode="json"))

    async def _handle_set_config(self, request: web.Request) -> web.Response:
        try:
            changes = await request.json()
            if not isinstance(changes, dict):
                raise ValueError("expected a JSON object")
            config = self.configure(**changes)
        except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            return error_response(400, f"invalid config: {exc}".splitlines()[0], "invalid_request_error")
        return web.json_response(config.model_dump(mode="json"))

    async def _handle_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def _handle_reset_stats(self, request: web.Request) -> web.Response:
        self.reset_stats()
        return web.json_response({"ok": True})


# ------------------------------------------------------------------------------------------------------- CLI


async def _run(
    config: SimConfig, host: str, port: int, exit_on_stdin_eof: bool = False, listen_fd: int | None = None
) -> None:
    sim = Simulator(config)
    sock = None if listen_fd is None else socket.socket(fileno=listen_fd)
    url = await sim.start_async(host, port, sock)
    print(f"svgagent simulator listening on {url}", flush=True)
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, done.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - not on this platform
            pass
    if exit_on_stdin_eof:  # started by another process: stop with it, even when it is killed

        def on_stdin() -> None:
            if not os.read(sys.stdin.fileno(), 4096):
                loop.remove_reader(sys.stdin.fileno())
                done.set()

        loop.add_reader(sys.stdin.fileno(), on_stdin)
    try:
        await done.wait()
    finally:
        await sim.stop_async()


def main(argv: list[str] | None = None) -> int:
    """``python -m svgagent.core.sim.simulator [--port P] [--policy-latency S] [--<knob> VALUE ...]``: prints
    ``svgagent simulator listening on <base url>`` once ready and serves until SIGINT/SIGTERM."""
    args = arg_parser().parse_args(argv)
    if args.nice > 0:
        with contextlib.suppress(OSError):
            os.nice(args.nice)
    try:
        config = config_from_args(args)
        # on uvloop where it is installed, as svgagent eval and serve run: the simulator stands in for remote
        # servers, and on the app's own cores its CPU is what the engine's runs share them with
        run_on_fast_loop(_run(config, args.host, args.port, args.exit_on_stdin_eof, args.listen_fd))
    except KeyboardInterrupt:
        pass
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        print(f"simulator: invalid --{where.split('.')[0].replace('_', '-')}: {problem['msg']}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"simulator: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
