"""A real OpenAI-compatible HTTP server on the loopback interface, serving the simulated models.

``POST /v1/chat/completions`` answers with the models of :mod:`benchmeasure.serving.sim.world`
(``n`` choices, token counts); ``GET /v1/models`` lists them. Failure injection, for testing
the client's retries: with probability ``fail_rate`` a request gets, in equal shares, HTTP 500,
HTTP 429, a reply delayed by ``hang_s`` seconds (longer than the client's timeout), or a
malformed body (status 200, not JSON). ``server.sim.pause()`` holds every request until
``server.sim.resume()``, so a test can keep a run in progress for as long as it needs.
Served by the standard library (``http.server``, one thread per connection).

Each reply's randomness is seeded by the world's seed, the request body, the request's
``X-BenchFill-Key`` header when it has one (the BenchFill loop sends its journal key,
``rewrite/<child id>``, so a parent's children, whose prompts are identical, are told apart) and how
many times that same (key, body) arrived before (the retries of one call come one after another).
So without failure injection a run's replies do not depend on the order in which its concurrent
requests arrive. Failure injection draws from one seeded stream in arrival order, so with
``fail_rate > 0`` which request fails does depend on that order. ``jitter_s`` delays each reply by
a random time (exponential with that mean, drawn in arrival order from ``jitter_seed``), so
concurrent replies finish in a shuffled order, as with real endpoints of uneven speed; the
replies themselves do not change.

Run it with ``python -m benchmeasure.serving.sim.server --world WORLD.json --port 0``: it prints
``listening on http://127.0.0.1:PORT/v1`` once ready (port 0 picks a free one).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from benchmeasure.base.options import SEED, integer, number
from benchmeasure.serving.sim.scope_world import ScopeWorld
from benchmeasure.serving.sim.world import World, respond
from benchmeasure.verifier.llm_client import KEY_HEADER

FAILURES = ("500", "429", "hang", "malformed")


class SimState:
    """The world plus the counters that seed each request's randomness."""

    def __init__(self, world: World, fail_rate: float = 0.0, hang_s: float = 5.0, seed: int = 0,
                 jitter_s: float = 0.0, jitter_seed: int = 0):
        self.world = world
        self.jitter_s = jitter_s
        self.jitter_rng = random.Random(f"jitter/{jitter_seed}")
        self.fail_rate = fail_rate
        self.hang_s = hang_s
        self.lock = threading.Lock()
        self.seen: dict = {}
        self.failure_rng = random.Random(f"failures/{seed}")
        self.requests = 0
        self.open = threading.Event()
        self.open.set()

    def pause(self):
        """Hold new and waiting requests until :meth:`resume`."""
        self.open.clear()

    def resume(self):
        self.open.set()

    def rng_for(self, request: dict, key: str | None = None) -> random.Random:
        """The randomness of one reply: seed, request key (if sent), request, and repetitions of that pair.

        The request counts by its content (keys sorted), not by the bytes a client happened to serialize, so
        two clients that send the same request in a different key order or spacing get the same replies."""
        body = json.dumps(request, sort_keys=True, separators=(",", ":")).encode()
        digest = hashlib.sha256(body if key is None else key.encode() + b"\0" + body).hexdigest()
        with self.lock:
            count = self.seen.get(digest, 0)
            self.seen[digest] = count + 1
        return random.Random(f"{self.world.seed}/{digest}/{count}")

    def jitter(self) -> float:
        """A reply's extra delay, drawn in arrival order (so replies finish shuffled): exponential with mean
        ``jitter_s``, at most 10 × ``jitter_s`` — a few slow replies, as from real endpoints of uneven speed."""
        if self.jitter_s <= 0:
            return 0.0
        with self.lock:
            return min(self.jitter_rng.expovariate(1.0 / self.jitter_s), 10 * self.jitter_s)

    def failure(self):
        with self.lock:
            self.requests += 1
            if self.failure_rng.random() < self.fail_rate:
                return self.failure_rng.choice(FAILURES)
        return None


def make_handler(state: SimState):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # A reply goes out as two writes (the headers, then the body). With Nagle's algorithm on, the body waits
        # for the client's ACK of the headers, which a client that delays its ACKs sends ~40 ms later: every reply
        # on a kept-alive connection took 47 ms instead of 4 (100 replies one after another, 2026-12-07).
        disable_nagle_algorithm = True

        def log_message(self, *args):  # quiet: the loop logs what matters
            pass

        def handle(self):
            try:
                super().handle()
            except ConnectionResetError:
                pass  # a client killed while its kept-alive connection waited: no request is left to answer

        def _send(self, status: int, payload: bytes, content_type: str = "application/json"):
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client hung up (a timeout or Ctrl-C on its side): nothing is left to answer

        def _json(self, status: int, obj):
            self._send(status, json.dumps(obj).encode())

        def do_GET(self):
            if self.path.rstrip("/").endswith("/models"):
                names = (state.world.model_names() if hasattr(state.world, "model_names")
                         else [*state.world.abilities, state.world.rewriter])
                self._json(200, {"object": "list", "data": [{"id": n, "object": "model"} for n in names]})
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.open.wait()
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._json(404, {"error": {"message": "not found"}})
            failure = state.failure()
            time.sleep(state.jitter())
            if failure == "500":
                return self._json(500, {"error": {"message": "simulated server error"}})
            if failure == "429":
                return self._json(429, {"error": {"message": "simulated rate limit"}})
            if failure == "malformed":
                return self._send(200, b'{"id": "cmpl-broken", "choices": [', "application/json")
            if failure == "hang":
                time.sleep(state.hang_s)
            try:
                request = json.loads(body)
                model, n = request["model"], int(request.get("n") or 1)
                prompt = "\n".join(str(m.get("content", "")) for m in request["messages"])
                rng = state.rng_for(request, self.headers.get(KEY_HEADER))
                texts = (state.world.respond(model, prompt, n, rng) if hasattr(state.world, "respond")
                         else respond(state.world, model, prompt, n, rng))
            except KeyError as exc:
                return self._json(404, {"error": {"message": f"unknown model or field {exc}"}})
            except (ValueError, TypeError) as exc:
                return self._json(400, {"error": {"message": f"bad request: {exc}"}})
            prompt_tokens = len(prompt.split())
            completion = sum(len(t.split()) for t in texts)
            self._json(200, {
                "id": f"cmpl-{hashlib.sha256(body).hexdigest()[:12]}", "object": "chat.completion",
                "created": int(time.time()), "model": model,
                "choices": [{"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": t}}
                            for i, t in enumerate(texts)],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                          "total_tokens": prompt_tokens + completion}})

    return Handler


def serve(world: World, port: int = 0, fail_rate: float = 0.0, hang_s: float = 5.0, seed: int = 0,
          jitter_s: float = 0.0, jitter_seed: int = 0):
    """Start the server in a background thread; returns ``(server, base_url)``; ``server.sim`` is its SimState."""
    state = SimState(world, fail_rate, hang_s, seed, jitter_s, jitter_seed)
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(state))
    server.sim = state
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Simulated OpenAI-compatible server (rewriter + verifier panel).")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--world", help="world.json written by the sim data set")
    source.add_argument("--scope", action="store_true",
                        help="serve the dynamic-benchmark solver (benchmeasure.serving.sim.scope_world) instead")
    parser.add_argument("--port", type=integer(0, 65_535), default=0, help="0 picks a free port")
    parser.add_argument("--fail-rate", type=number(0.0, 1.0), default=0.0, help="share of requests that fail (0..1)")
    parser.add_argument("--hang-s", type=number(0.0, 3600.0), default=5.0, help="delay of a 'hang' failure, seconds")
    parser.add_argument("--seed", type=SEED, default=0)
    parser.add_argument("--jitter-s", type=number(0.0, 3600.0), default=0.0,
                        help="delay each reply by a random time of this mean (s, exponential): replies finish shuffled")
    parser.add_argument("--jitter-seed", type=SEED, default=0, help="seed of the delays (drawn in arrival order)")
    args = parser.parse_args(argv)
    world = ScopeWorld(args.seed) if args.scope else World.load(args.world)
    server, url = serve(world, args.port, args.fail_rate, args.hang_s, args.seed, args.jitter_s,
                        args.jitter_seed)
    print(f"listening on {url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
