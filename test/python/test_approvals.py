"""Client-side tools and human-in-the-loop approvals, as Letta's guides show them in Python.

A client-side tool is sent with each request (`client_tools`); when the model calls it the turn stops with
`requires_approval`, the client runs it and sends back `{"type": "approval", "approvals": [{"type": "tool",
"tool_call_id", "tool_return", "status"}]}`. A server tool that requires approval stops the same way; the
client answers `{"type": "approval", "approvals": [{"type": "approval", "tool_call_id", "approve", "reason"}]}`.
"""

import base64
import inspect
import json
import textwrap
import uuid

import letta_client
import pytest

from conftest import EMBEDDING, MODEL, remove
from model_stub import Reply, call

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city right now.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city."}},
        "required": ["city"],
    },
}


def by_type(messages, message_type):
    return [m for m in messages if m.message_type == message_type]


def tool_messages(request):
    return [m for m in request["messages"] if m["role"] == "tool"]


def send_money(amount: int, to: str) -> str:
    """
    Send money to someone.

    Args:
        amount (int): How much, in euros.
        to (str): Who gets it.

    Returns:
        str: A receipt.
    """
    return f"sent {amount} EUR to {to}"


@pytest.fixture
def send_money_tool(client):
    """Upserts send_money (with `fields`); deletes it after the test."""
    made = []

    def make(**fields):
        source = textwrap.dedent(inspect.getsource(send_money))
        made.append(client.tools.upsert(source_code=source, source_type="python", **fields))
        return made[-1]

    yield make
    remove(client.tools.delete, *(tool.id for tool in made))


@pytest.fixture
def agent_with(client):
    made = []

    def create(**fields):
        agent = client.agents.create(
            name=f"suite-approvals-{uuid.uuid4().hex[:8]}",
            model=MODEL,
            embedding=EMBEDDING,
            memory_blocks=[{"label": "persona", "value": "A careful assistant."}],
            **fields,
        )
        made.append(agent.id)
        return agent

    yield create
    for agent_id in made:
        client.agents.delete(agent_id)


def pause_on(client, agent_id, model, tool_call, **fields):
    """Sends a user message the model answers with `tool_call`; returns the approval request."""
    model.enqueue(Reply(tool_calls=[tool_call]))
    response = client.agents.messages.create(agent_id, messages=[{"role": "user", "content": "go"}], **fields)
    assert response.stop_reason.stop_reason == "requires_approval"
    request = response.messages[-1]
    assert request.message_type == "approval_request_message"
    return request


def test_client_side_tool(client, agent, model):
    model.enqueue(Reply(tool_calls=[call("get_weather", city="Paris")]))
    response = client.agents.messages.create(
        agent.id, messages=[{"role": "user", "content": "Weather in Paris?"}], client_tools=[WEATHER]
    )

    # The model was offered the client's tool, and its call waits for the client.
    offered = {t["function"]["name"]: t["function"] for t in model.requests[0]["tools"]}
    assert offered["get_weather"]["parameters"] == WEATHER["parameters"]
    assert response.stop_reason.stop_reason == "requires_approval"
    request = response.messages[-1]
    assert request.message_type == "approval_request_message"
    assert request.tool_call.name == "get_weather"
    assert json.loads(request.tool_call.arguments) == {"city": "Paris"}
    assert not by_type(response.messages, "tool_return_message")

    # The client runs the tool and sends its return; the model's next call sees it.
    model.enqueue(Reply(text="Sunny in Paris, 21 °C."))
    call_id = request.tool_call.tool_call_id
    response = client.agents.messages.create(
        agent.id,
        messages=[
            {
                "type": "approval",
                "approvals": [{"type": "tool", "tool_call_id": call_id, "tool_return": "sunny, 21C", "status": "success"}],
            }
        ],
        client_tools=[WEATHER],
    )
    assert response.stop_reason.stop_reason == "end_turn"
    assert [m.content for m in by_type(response.messages, "assistant_message")] == ["Sunny in Paris, 21 °C."]
    [answered] = tool_messages(model.requests[-1])
    assert answered["tool_call_id"] == call_id and "sunny, 21C" in str(answered["content"])
    # The history keeps the call, the client's answer and the return, in order.
    history = client.agents.messages.list(agent.id, limit=50, order="asc")
    kinds = [m.message_type for m in history if m.message_type != "system_message"]
    assert kinds == ["user_message", "approval_request_message", "approval_response_message", "tool_return_message", "assistant_message"]
    returns = by_type(history, "tool_return_message")
    assert [r.tool_call_id for r in returns] == [call_id]
    assert "sunny, 21C" in returns[0].tool_return


def test_client_side_tool_returning_an_image(client, agent, model):
    # A screenshot tool's return, as letta-code sends one: text and an image, both kept as parts.
    model.enqueue(Reply(tool_calls=[call("get_weather", city="Oslo")]))
    response = client.agents.messages.create(
        agent.id, messages=[{"role": "user", "content": "Weather in Oslo?"}], client_tools=[WEATHER]
    )
    call_id = response.messages[-1].tool_call.tool_call_id
    png = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d49484452")).decode()
    parts = [
        {"type": "text", "text": "The radar:"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
    ]
    model.enqueue(Reply(text="Rain is coming."))
    response = client.agents.messages.create(
        agent.id,
        messages=[{"type": "approval", "approvals": [{"type": "tool", "tool_call_id": call_id, "tool_return": parts, "status": "success"}]}],
        client_tools=[WEATHER],
    )
    assert response.stop_reason.stop_reason == "end_turn"
    # Chat Completions takes no image in a tool message: the model reads Letta's text form.
    [answered] = tool_messages(model.requests[-1])
    assert "The radar: [Image omitted]" in str(answered["content"]) and png not in str(answered["content"])
    [shown] = by_type(client.agents.messages.list(agent.id, limit=50), "tool_return_message")
    assert shown.tool_return == "The radar: [Image omitted]"
    [text, image] = shown.tool_returns[0].tool_return
    assert text.text == "The radar:"
    assert image.type == "image" and image.source.media_type == "image/png" and image.source.data == png


def test_client_side_tool_streamed(client, agent, model):
    # As letta-code runs its tools: a stream that ends asking for the client's return, then another.
    model.enqueue(Reply(tool_calls=[call("get_weather", city="Lima")]))
    chunks = list(
        client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "Lima?"}], client_tools=[WEATHER], streaming=True)
    )
    kinds = [c.message_type for c in chunks if c.message_type != "ping"]
    assert kinds[-3:] == ["approval_request_message", "stop_reason", "usage_statistics"]
    request = next(c for c in chunks if c.message_type == "approval_request_message")
    assert next(c for c in chunks if c.message_type == "stop_reason").stop_reason == "requires_approval"

    model.enqueue(Reply(text="Cloudy in Lima."))
    approval = {"type": "tool", "tool_call_id": request.tool_call.tool_call_id, "tool_return": "cloudy", "status": "success"}
    chunks = list(
        client.agents.messages.create(
            agent.id, messages=[{"type": "approval", "approvals": [approval]}], client_tools=[WEATHER], streaming=True
        )
    )
    assert [c.content for c in chunks if c.message_type == "assistant_message"] == ["Cloudy in Lima."]
    assert next(c for c in chunks if c.message_type == "stop_reason").stop_reason == "end_turn"


def test_client_side_tool_error_return(client, agent, model):
    request = pause_on(client, agent.id, model, call("get_weather", city="Atlantis"), client_tools=[WEATHER])
    model.enqueue(Reply(text="I could not find Atlantis."))
    call_id = request.tool_call.tool_call_id
    approval = {"type": "tool", "tool_call_id": call_id, "tool_return": "no such city", "status": "error"}
    response = client.agents.messages.create(
        agent.id, messages=[{"type": "approval", "approvals": [approval]}], client_tools=[WEATHER]
    )
    assert response.stop_reason.stop_reason == "end_turn"
    assert json.loads(tool_messages(model.requests[-1])[0]["content"])["status"] == "Failed"
    assert json.loads(tool_messages(model.requests[-1])[0]["content"])["message"] == "no such city"
    [returned] = by_type(client.agents.messages.list(agent.id, limit=50), "tool_return_message")
    assert returned.status == "error"


def test_a_paused_turn_holds_new_messages(client, agent, model):
    request = pause_on(client, agent.id, model, call("get_weather", city="Oslo"), client_tools=[WEATHER])
    with pytest.raises(letta_client.ConflictError) as raised:
        client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "never mind"}])
    assert raised.value.status_code == 409
    # Answering the call lets the turn go on.
    model.enqueue(Reply(text="Rainy."))
    approval = {"type": "tool", "tool_call_id": request.tool_call.tool_call_id, "tool_return": "rain", "status": "success"}
    response = client.agents.messages.create(
        agent.id, messages=[{"type": "approval", "approvals": [approval]}], client_tools=[WEATHER]
    )
    assert response.stop_reason.stop_reason == "end_turn"


def test_approve_a_server_tool(client, model, send_money_tool, agent_with):
    tool = send_money_tool(default_requires_approval=True)
    assert tool.default_requires_approval is True
    agent = agent_with(tool_ids=[tool.id])

    request = pause_on(client, agent.id, model, call("send_money", amount=5, to="Bob"))
    assert request.tool_call.name == "send_money"
    # Nothing ran yet: the model was called once.
    assert len(model.requests) == 1

    model.enqueue(Reply(text="Done: 5 EUR to Bob."))
    approval = {"type": "approval", "tool_call_id": request.tool_call.tool_call_id, "approve": True}
    response = client.agents.messages.create(agent.id, messages=[{"type": "approval", "approvals": [approval]}])

    [returned] = by_type(response.messages, "tool_return_message")
    assert returned.status == "success" and returned.tool_return == "sent 5 EUR to Bob"
    assert "sent 5 EUR to Bob" in str(tool_messages(model.requests[-1])[0]["content"])
    assert response.stop_reason.stop_reason == "end_turn"
    assert [m.content for m in by_type(response.messages, "assistant_message")] == ["Done: 5 EUR to Bob."]


def test_deny_with_a_reason(client, model, send_money_tool, agent_with):
    tool = send_money_tool(default_requires_approval=True)
    agent = agent_with(tool_ids=[tool.id])
    request = pause_on(client, agent.id, model, call("send_money", amount=500, to="Mallory"))

    model.enqueue(Reply(text="Understood, I will not send it."))
    denial = {
        "type": "approval",
        "tool_call_id": request.tool_call.tool_call_id,
        "approve": False,
        "reason": "Mallory is not a known payee",
    }
    response = client.agents.messages.create(agent.id, messages=[{"type": "approval", "approvals": [denial]}])

    # The tool did not run; the model read the denial and its reason, in Letta's words.
    text = "Error: request to call tool denied. User reason: Mallory is not a known payee"
    [denied] = tool_messages(model.requests[-1])
    assert denied["tool_call_id"] == request.tool_call.tool_call_id
    assert json.loads(denied["content"])["message"] == text
    assert "sent 500" not in json.dumps(model.requests[-1])
    assert [(r.status, r.tool_return) for r in by_type(response.messages, "tool_return_message")] == [("error", text)]
    assert response.stop_reason.stop_reason == "end_turn"
    returns = by_type(client.agents.messages.list(agent.id, limit=50), "tool_return_message")
    assert [r.status for r in returns] == ["error"]


def test_requires_approval_tool_rule(client, model, send_money_tool, agent_with):
    tool = send_money_tool()  # no approval by default: the agent's rule asks for it
    agent = agent_with(tool_ids=[tool.id], tool_rules=[{"type": "requires_approval", "tool_name": "send_money"}])
    request = pause_on(client, agent.id, model, call("send_money", amount=1, to="Carol"))

    model.enqueue(Reply(text="Sent."))
    approval = {"type": "approval", "tool_call_id": request.tool_call.tool_call_id, "approve": True}
    response = client.agents.messages.create(agent.id, messages=[{"type": "approval", "approvals": [approval]}])
    assert [r.tool_return for r in by_type(response.messages, "tool_return_message")] == ["sent 1 EUR to Carol"]


def test_approval_switched_on_and_off_per_agent(client, agent, model, send_money_tool):
    tool = send_money_tool()
    client.agents.tools.attach(tool.id, agent_id=agent.id)

    # Without approval the tool just runs.
    model.enqueue(Reply(tool_calls=[call("send_money", amount=2, to="Dan")]), Reply(text="Sent."))
    response = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "pay Dan"}])
    assert response.stop_reason.stop_reason == "end_turn"
    assert [r.tool_return for r in by_type(response.messages, "tool_return_message")] == ["sent 2 EUR to Dan"]

    client.agents.tools.update_approval("send_money", agent_id=agent.id, body_requires_approval=True)
    request = pause_on(client, agent.id, model, call("send_money", amount=3, to="Eve"))
    model.enqueue(Reply(text="Not sent."))
    denial = {"type": "approval", "tool_call_id": request.tool_call.tool_call_id, "approve": False, "reason": "no"}
    client.agents.messages.create(agent.id, messages=[{"type": "approval", "approvals": [denial]}])

    client.agents.tools.update_approval("send_money", agent_id=agent.id, body_requires_approval=False)
    model.enqueue(Reply(tool_calls=[call("send_money", amount=4, to="Fay")]), Reply(text="Sent."))
    response = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "pay Fay"}])
    assert response.stop_reason.stop_reason == "end_turn"
    assert [r.tool_return for r in by_type(response.messages, "tool_return_message")] == ["sent 4 EUR to Fay"]


def test_approval_for_an_unknown_call_is_refused(client, agent, model):
    pause_on(client, agent.id, model, call("get_weather", city="Rome"), client_tools=[WEATHER])
    wrong = {"type": "tool", "tool_call_id": "call_nobody_made", "tool_return": "x", "status": "success"}
    with pytest.raises((letta_client.BadRequestError, letta_client.UnprocessableEntityError, letta_client.ConflictError)):
        client.agents.messages.create(agent.id, messages=[{"type": "approval", "approvals": [wrong]}], client_tools=[WEATHER])
