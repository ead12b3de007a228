"""Letta's own server beside this one: the same client, model stub and scenarios, in one run.

Each server is started in turn (test/python/servers.py) against one model stub that answers at once,
then measured through Letta's official Python client, as a Letta app would call it:

  plain_step_ms          a turn of one model call and no tool
  sandboxed_tool_step_ms a turn whose model calls one custom Python tool (warm: after the untimed runs)
  client_tool_pause_ms   a turn that pauses on a client-side tool, and the answer that finishes it
  steps_per_second       16 agents, one client thread each, sending turns back to back

Writes bench/letta-side-by-side.json and .md (`npm run bench:letta`). Ratios are this server's figure
over Letta's: below 1 is faster for times, above 1 is more for throughput.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import statistics
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test/python"))

from letta_client import Letta  # noqa: E402
from model_stub import ModelStub, Reply, call  # noqa: E402
from servers import running_server  # noqa: E402

HERE = Path(__file__).resolve().parent
# The stub's model by each server's name for it (test/python/conftest.py says why they differ).
MODELS = {"this": "openai/gpt-4o-mini", "letta": "openai-proxy/gpt-4o-mini"}
EMBEDDING = "openai/text-embedding-3-small"
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def echo_text(text: str) -> str:
    """Echoes its input.

    Args:
        text: what to echo
    """
    return text


def scripted(request: dict[str, Any]) -> Reply:
    """Stateless, so concurrent turns cannot take each other's replies: a user message `call:<tool>`
    gets a call of that tool, a tool's return the final answer, anything else a plain answer."""
    last = request["messages"][-1]
    if last["role"] == "tool":
        return Reply(text="done")
    asked = re.search(r"call:(\w+)", json.dumps(last.get("content")))
    if asked and asked.group(1) == "get_weather":
        return Reply(tool_calls=[call("get_weather", city="Paris")])
    if asked:
        return Reply(tool_calls=[call(asked.group(1), text="hi")])
    return Reply(text="ok")


def new_agent(client: Letta, model: str, tool_ids: list[str] | None = None) -> str:
    agent = client.agents.create(
        model=model,
        embedding=EMBEDDING,
        memory_blocks=[{"label": "human", "value": "Name: Alice"}, {"label": "persona", "value": "Helpful."}],
        tool_ids=tool_ids or [],
        include_base_tools=False,
    )
    return agent.id


def say(client: Letta, agent_id: str, text: str, **extra: Any) -> Any:
    return client.agents.messages.create(agent_id, messages=[{"role": "user", "content": text}], **extra)


def timed(fn: Callable[[], None], warmup: int, reps: int) -> list[float]:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": round(statistics.median(ordered), 2),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
        "mean": round(statistics.fmean(ordered), 2),
    }


def pause_and_answer(client: Letta, agent_id: str) -> None:
    paused = say(client, agent_id, "call:get_weather", client_tools=[WEATHER])
    assert paused.stop_reason.stop_reason == "requires_approval", paused.stop_reason
    request = next(m for m in paused.messages if m.message_type == "approval_request_message")
    approval = {
        "type": "approval",
        "approvals": [{"type": "tool", "tool_call_id": request.tool_call.tool_call_id, "tool_return": "sunny", "status": "success"}],
    }
    done = client.agents.messages.create(agent_id, messages=[approval], client_tools=[WEATHER])
    assert done.stop_reason.stop_reason == "end_turn", done.stop_reason


def throughput(client: Letta, agents: list[str], seconds: float) -> float:
    deadline = time.perf_counter() + seconds
    counts = [0] * len(agents)

    def loop(i: int) -> None:
        while time.perf_counter() < deadline:
            say(client, agents[i], "hello")
            counts[i] += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(len(agents))]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - start)


def measure(url: str, model: str, warmup: int, reps: int, seconds: float) -> dict[str, Any]:
    client = Letta(base_url=url, api_key="unused", max_retries=0, timeout=300)
    plain = new_agent(client, model)
    tool = client.tools.upsert(source_code=inspect.getsource(echo_text))
    with_tool = new_agent(client, model, [tool.id])
    pausing = new_agent(client, model)
    crowd = [new_agent(client, model) for _ in range(16)]

    def tool_step() -> None:
        reply = say(client, with_tool, "call:echo_text")
        returns = [m for m in reply.messages if m.message_type == "tool_return_message"]
        assert returns and returns[0].status == "success", reply.messages

    for agent in crowd:  # each agent's first turn is not part of the steady state
        say(client, agent, "hello")
    return {
        "plain_step_ms": summary(timed(lambda: say(client, plain, "hello"), warmup, reps)),
        "sandboxed_tool_step_ms": summary(timed(tool_step, warmup, reps)),
        "client_tool_pause_ms": summary(timed(lambda: pause_and_answer(client, pausing), warmup, reps)),
        "steps_per_second": round(throughput(client, crowd, seconds), 2),
    }


def ratios(ours: dict[str, Any], letta: dict[str, Any]) -> dict[str, float]:
    out = {}
    for name, value in ours.items():
        theirs = letta[name]
        out[name] = round(value["p50"] / theirs["p50"] if isinstance(value, dict) else value / theirs, 2)
    return out


def markdown(result: dict[str, Any]) -> str:
    ours, letta, ratio = result["this"], result["letta"], result["ratio"]
    rows = []
    for name in ours:
        fmt = lambda v: f"{v['p50']} (p95 {v['p95']})" if isinstance(v, dict) else f"{v}"
        rows.append(f"| `{name}` | {fmt(ours[name])} | {fmt(letta[name])} | {ratio[name]} |")
    method = result["method"]
    return "\n".join(
        [
            "# Letta side by side: performance",
            "",
            "Generated by `npm run bench:letta` (`bench/letta_side_by_side.py`, which says how each figure is",
            "taken). Both servers on this machine in one run, one after the other, with the same model stub",
            f"(answers at once) and Letta's Python client: this server on {method['this_database']}, Letta",
            f"0.16.8 on {method['letta_database']}. {method['reps']} timed repetitions after {method['warmup']}",
            f"untimed ones; throughput over {method['seconds']} s. Times in ms (p50, p95); the ratio is this",
            "server's p50 over Letta's (below 1: faster), or its throughput over Letta's (above 1: more).",
            "This server runs a custom tool in bubblewrap, Letta's local sandbox in a plain subprocess of its",
            "own interpreter (which imports Letta's client for every call). Letta runs with the one fix",
            "scripts/letta-server.sh makes (a collected OpenAI client's stalls), in its favour.",
            "",
            "| figure | this server | Letta 0.16.8 | ratio |",
            "| ------ | ----------- | ------------ | ----- |",
            *rows,
            "",
            f"Taken {result['taken']} on {method['cpus']} CPUs.",
            "",
        ]
    )


def write(result: dict[str, Any]) -> None:
    (HERE / "letta-side-by-side.json").write_text(json.dumps(result, indent=2) + "\n")
    (HERE / "letta-side-by-side.md").write_text(markdown(result))


def main() -> None:
    parser = argparse.ArgumentParser(description="Letta's server beside this one")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--database-url", default=os.environ.get("LETTA_SUITE_DATABASE_URL"))
    args = parser.parse_args()

    stub = ModelStub()
    stub.start()
    stub.default = scripted
    result: dict[str, Any] = {}
    for target in ("this", "letta"):
        print(f"bench:letta: measuring {target}", file=sys.stderr)
        with running_server(target, stub.url, args.database_url if target == "this" else None) as url:
            result[target] = measure(url, MODELS[target], args.warmup, args.reps, args.seconds)
        print(json.dumps(result[target]), file=sys.stderr)
    stub.stop()
    result["ratio"] = ratios(result["this"], result["letta"])
    result["method"] = {
        "warmup": args.warmup,
        "reps": args.reps,
        "seconds": args.seconds,
        "this_database": "PostgreSQL" if args.database_url else "its embedded PGlite",
        # scripts/letta-server.sh: Letta 0.16.8 has no SQLite engine.
        "letta_database": "a PostgreSQL 16 with pgvector of its own, synchronous_commit off",
        "cpus": os.cpu_count(),
    }
    result["taken"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    write(result)


if __name__ == "__main__":
    main()
