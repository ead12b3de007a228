"""docs/using-it.md's Python snippets, run as written, in order, against the server and the model stub.

Every block the doc marks `<!-- snippet: NAME -->` runs in one namespace, as a reader runs them one after
the other: a later snippet uses the `client` and `agent` an earlier one made. Only the server's address
and, on Letta, the model's handle are this run's. SCRIPTS says what the model answers during each
snippet, and the checks what must hold after it; a snippet that raises, a check that fails, or a snippet
the test does not know fails the test, so the docs cannot drift from the server.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any, Callable

from conftest import MODEL, remove
from model_stub import Reply, call

DOC = Path(__file__).resolve().parents[2] / "docs" / "using-it.md"
DOC_URL = "http://127.0.0.1:8283"
DOC_MODEL = "openai/gpt-4o-mini"
# A marker line, a blank line (prettier keeps one), then the fenced block.
SNIPPET = re.compile(r"^<!-- snippet: ([a-z-]+) -->\n\n```(\w+)\n(.*?)^```$", re.M | re.S)


def snippets(language: str) -> list[tuple[str, str]]:
    """The doc's marked blocks of `language` (`python`, `ts`), in the doc's order, as (name, code)."""
    return [(name, code) for name, lang, code in SNIPPET.findall(DOC.read_text()) if lang == language]


def by_type(messages, message_type: str) -> list[Any]:
    return [m for m in messages if m.message_type == message_type]


def check_agent(ns: dict[str, Any], model, printed: str) -> None:
    assert ns["agent"].id.startswith("agent-")
    assert ns["response"].stop_reason.stop_reason == "end_turn"
    assert "assistant_message Hello, Alice." in printed


def check_tool(ns: dict[str, Any], model, printed: str) -> None:
    attached = ns["client"].agents.tools.list(ns["agent"].id)
    assert "roll_dice" in [tool.name for tool in attached]
    (rolled,) = ns["rolled"]
    assert 1 <= int(rolled) <= 20


def check_client_tools(ns: dict[str, Any], model, printed: str) -> None:
    offered = {tool["function"]["name"] for tool in model.requests[0]["tools"]}
    assert "get_weather" in offered
    seen = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert any("Sunny in Paris" in str(content) for content in seen)
    assert ns["response"].stop_reason.stop_reason == "end_turn"
    assert "It is sunny in Paris." in printed


def check_approval(ns: dict[str, Any], model, printed: str) -> None:
    assert printed.startswith("roll_dice")
    (result,) = by_type(ns["response"].messages, "tool_return_message")
    assert result.status == "success" and 1 <= int(result.tool_return) <= 20
    assert ns["response"].stop_reason.stop_reason == "end_turn"


def check_streaming(ns: dict[str, Any], model, printed: str) -> None:
    assert model.requests[-1].get("stream") is True  # stream_tokens: the model was called streaming
    assert "Once upon a time, a die rolled." in printed
    assert "end_turn" in printed


# What the model answers during each snippet, and what must hold after it.
SCRIPTS: dict[str, tuple[list[Reply], Callable[[dict[str, Any], Any, str], None]]] = {
    "agent": ([Reply(text="Hello, Alice.")], check_agent),
    "tool": ([Reply(tool_calls=[call("roll_dice", sides=20)]), Reply(text="A fine roll.")], check_tool),
    "client-tools": (
        [Reply(tool_calls=[call("get_weather", city="Paris")]), Reply(text="It is sunny in Paris.")],
        check_client_tools,
    ),
    "approval": ([Reply(tool_calls=[call("roll_dice", sides=20)]), Reply(text="Rolled.")], check_approval),
    "streaming": ([Reply(text="Once upon a time, a die rolled.")], check_streaming),
}


def test_the_doc_marks_each_flow_once_per_language():
    assert [name for name, _ in snippets("python")] == list(SCRIPTS)
    assert [name for name, _ in snippets("ts")] == list(SCRIPTS)
    # A marker whose block the pattern misses (a typo, no blank line) would leave a snippet unrun.
    markers = re.findall(r"^<!-- snippet: ([a-z-]+) -->$", DOC.read_text(), re.M)
    assert len(markers) == len(SNIPPET.findall(DOC.read_text()))


def test_the_python_snippets_run_as_written(base_url, model, capsys, tmp_path):
    namespace: dict[str, Any] = {"__name__": f"docs_snippets_{uuid.uuid4().hex[:8]}"}
    try:
        for name, code in snippets("python"):
            replies, check = SCRIPTS[name]
            model.reset()
            model.enqueue(*replies)
            # From a file of its own, so that `inspect.getsource` finds a snippet's functions.
            source = tmp_path / f"{name}.py"
            source.write_text(code.replace(DOC_URL, base_url).replace(DOC_MODEL, MODEL))
            capsys.readouterr()
            exec(compile(source.read_text(), str(source), "exec"), namespace)
            check(namespace, model, capsys.readouterr().out)
    finally:
        if "agent" in namespace:
            remove(namespace["client"].agents.delete, namespace["agent"].id)
        if "tool" in namespace:
            remove(namespace["client"].tools.delete, namespace["tool"].id)

