"""A local server that speaks OpenAI's chat completions and embeddings wire protocol.

Both servers under test (this one and Letta's) call it through their real OpenAI provider code, so
the suite scripts the model's replies and reads what each server sent. Standard library only: the
suite's virtual environment holds the official client and pytest, nothing else.

Run alone (the bench, a Letta server checked by hand): python3 model_stub.py --port 8399
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union

#: What text-embedding-3-small returns; Letta checks vectors against its embedding config's size.
EMBEDDING_DIM = 1536
MODELS = ["gpt-4o-mini", "text-embedding-3-small"]
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


@dataclass
class Reply:
    """One scripted model reply: text, tool calls, or an HTTP error status."""

    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning: str | None = None
    delay_s: float = 0.0
    status: int | None = None


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A tool call of a scripted reply."""
    return {"name": name, "arguments": arguments}


Script = Union[Reply, Callable[[dict[str, Any]], Reply]]
_ids = itertools.count(1)


def embedding(text: str) -> list[float]:
    """A bag of words as a unit vector: texts sharing words are near, so searches rank deterministically."""
    vector = [0.0] * EMBEDDING_DIM
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
        vector[bucket % EMBEDDING_DIM] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class ModelStub:
    """Replies in order; when none are queued, the default (a plain "ok")."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._queue: deque[Script] = deque()
        self._lock = threading.Lock()
        self.default: Callable[[dict[str, Any]], Reply] = lambda _request: Reply(text="ok")
        self._server: ThreadingHTTPServer | None = None
        #: The base URL an OpenAI client is configured with, once started.
        self.url = ""

    # -- scripting -------------------------------------------------------------------------------
    def enqueue(self, *replies: Script) -> None:
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.default = lambda _request: Reply(text="ok")

    def next_reply(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(request)
            script = self._queue.popleft() if self._queue else self.default
        return script(request) if callable(script) else script

    # -- serving ---------------------------------------------------------------------------------
    def start(self, port: int = 0) -> str:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:  # the suite's output stays readable
                pass

            def do_GET(self) -> None:
                if self.path.split("?")[0].endswith("/models"):
                    data = [{"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "stub"} for m in MODELS]
                    return self._json(200, {"object": "list", "data": data})
                self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                if self.path.endswith("/embeddings"):
                    return self._json(200, embeddings(body))
                if not self.path.endswith("/chat/completions"):
                    return self._json(404, {"error": {"message": "not found"}})
                reply = stub.next_reply(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status:
                    message = f"stub error {reply.status}"
                    return self._json(reply.status, {"error": {"message": message, "type": "server_error"}})
                if body.get("stream"):
                    return self._stream(chunks(body, reply))
                self._json(200, completion(body, reply))

            def _json(self, status: int, payload: Any) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _stream(self, frames: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    for frame in frames:
                        self.wfile.write(f"data: {json.dumps(frame)}\n\n".encode())
                        self.wfile.flush()
                        time.sleep(0.002)
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        return self.url

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()


def _tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": c.get("id") or f"call_stub{next(_ids):06d}",
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))},
        }
        for c in reply.tool_calls
    ]


def completion(request: dict[str, Any], reply: Reply) -> dict[str, Any]:
    tool_calls = _tool_calls(reply)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "gpt-4o-mini"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": USAGE,
    }


def _pieces(text: str | None) -> list[str]:
    """A streamed text's tokens: a few characters each."""
    return re.findall(r"[\s\S]{1,4}", text or "")


def chunks(request: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
    """The reply as chat completion chunks, text and each call's arguments a few characters at a time."""
    ident, created, model = f"chatcmpl-{next(_ids)}", int(time.time()), request.get("model", "gpt-4o-mini")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [choice]}

    tool_calls = _tool_calls(reply)
    frames = [chunk({"role": "assistant", "content": ""})]
    frames += [chunk({"reasoning_content": p}) for p in _pieces(reply.reasoning)]
    frames += [chunk({"content": p}) for p in _pieces(reply.text)]
    for index, tc in enumerate(tool_calls):
        head = {"index": index, "id": tc["id"], "type": "function", "function": {"name": tc["function"]["name"], "arguments": ""}}
        frames.append(chunk({"tool_calls": [head]}))
        frames += [chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}) for p in _pieces(tc["function"]["arguments"])]
    frames.append(chunk({}, "tool_calls" if tool_calls else "stop"))
    if (request.get("stream_options") or {}).get("include_usage"):
        frames.append({**chunk({}), "choices": [], "usage": USAGE})
    return frames


def embeddings(body: dict[str, Any]) -> dict[str, Any]:
    texts = body.get("input")
    texts = [texts] if isinstance(texts, str) else list(texts or [])
    if body.get("encoding_format") == "base64":
        import base64
        import struct

        encode: Callable[[list[float]], Any] = lambda v: base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode()
    else:
        encode = lambda v: v
    data = [{"object": "embedding", "index": i, "embedding": encode(embedding(t))} for i, t in enumerate(texts)]
    return {"object": "list", "data": data, "model": body.get("model"), "usage": {"prompt_tokens": 1, "total_tokens": 1}}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8399)
    stub = ModelStub()
    print(stub.start(parser.parse_args().port), flush=True)
    threading.Event().wait()
