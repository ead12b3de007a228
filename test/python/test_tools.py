"""Custom tools from Python functions, as Letta's "Custom server tools" guide makes them: the schema Letta
derives from a Google docstring, the model calling the tool, errors, pip requirements, running and listing.

The guide's `client.tools.upsert_from_function(func=f)` belonged to the 0.x client; letta-client 1.x has
only `tools.upsert(source_code=...)`, so `upsert_from_function` below sends what the 0.x helper sent: the
function's dedented source, as Python.
"""

import inspect
import json
import textwrap
import uuid

import letta_client
import pytest

from conftest import EMBEDDING, MODEL, letta_defect, remove
from model_stub import Reply, call


def by_type(messages, message_type):
    return [m for m in messages if m.message_type == message_type]


def upsert_from_function(client, func, **fields):
    return client.tools.upsert(source_code=textwrap.dedent(inspect.getsource(func)), source_type="python", **fields)


@pytest.fixture
def tools(client):
    """Upserts tools from functions; deletes them after the test."""
    made = []

    def make(func, **fields):
        tool = upsert_from_function(client, func, **fields)
        made.append(tool.id)
        return tool

    yield make
    remove(client.tools.delete, *made)


def agent_with(client, *tool_ids):
    return client.agents.create(
        name=f"suite-tools-{uuid.uuid4().hex[:8]}",
        model=MODEL,
        embedding=EMBEDDING,
        memory_blocks=[{"label": "persona", "value": "A helpful assistant."}],
        tool_ids=list(tool_ids),
    )


# The functions below are tools: only their source reaches the server, so each imports what it uses.


def plan_trip(city: str, nights: int, budget: float, travellers: list[str], refundable: bool = False, note: str = "") -> str:
    """
    Plan a trip to a city.

    Books nothing: it only drafts the plan.

    Args:
        city (str): The city to visit.
        nights (int): How many nights to stay.
        budget (float): The most to spend, in euros.
        travellers (list[str]): Who is going.
        refundable (bool): Whether bookings must be refundable.
        note (str): Anything the planner should know.

    Returns:
        str: The plan.
    """
    return f"{nights} nights in {city} for {', '.join(travellers)}"


def add_numbers(a: int, b: int) -> str:
    """
    Add two numbers.

    Args:
        a (int): The first number.
        b (int): The second number.

    Returns:
        str: The sum, spelled out.
    """
    return f"{a} + {b} = {a + b}"


def explode(fuse: str) -> str:
    """
    Always fails.

    Args:
        fuse (str): What lit the fuse.

    Returns:
        str: Never returns.
    """
    raise ValueError(f"boom after {fuse}")


def camelize(words: str) -> str:
    """
    Turn snake_case words into CamelCase with the inflection package.

    Args:
        words (str): Words joined by underscores.

    Returns:
        str: The CamelCase form.
    """
    import inflection

    return inflection.camelize(words)


def shapes(n: int) -> dict:
    """
    Returns a dict.

    Args:
        n (int): A number.

    Returns:
        dict: Shapes of it.
    """
    return {"n": n, "twice": [n, n], "even": n % 2 == 0, "none": None}


def undocumented(x: int) -> str:
    """
    A parameter without a description in the docstring.
    """
    return str(x)


def test_schema_from_google_docstring(tools):
    tool = tools(plan_trip)

    assert tool.name == "plan_trip"
    assert tool.tool_type == "custom" and tool.source_type == "python"
    assert tool.description == "Plan a trip to a city.\n\nBooks nothing: it only drafts the plan."
    assert tool.json_schema == {
        "name": "plan_trip",
        "description": "Plan a trip to a city.\n\nBooks nothing: it only drafts the plan.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city to visit."},
                "nights": {"type": "integer", "description": "How many nights to stay."},
                "budget": {"type": "number", "description": "The most to spend, in euros."},
                "travellers": {"type": "array", "items": {"type": "string"}, "description": "Who is going."},
                "refundable": {"type": "boolean", "description": "Whether bookings must be refundable."},
                "note": {"type": "string", "description": "Anything the planner should know."},
            },
            "required": ["city", "nights", "budget", "travellers"],
        },
    }
    # The parameters keep the signature's order: a model fills arguments in the order it is given them.
    assert list(tool.json_schema["parameters"]["properties"]) == ["city", "nights", "budget", "travellers", "refundable", "note"]


def test_upsert_replaces_by_name(client, tools):
    first = tools(add_numbers)
    changed = inspect.getsource(add_numbers).replace("Add two numbers.", "Add two whole numbers.")
    second = client.tools.upsert(source_code=changed, source_type="python")
    assert second.id == first.id
    assert second.json_schema["description"] == "Add two whole numbers."
    assert client.tools.retrieve(first.id).description == "Add two whole numbers."


def test_update_keeps_the_schema_unless_given_one(client, tools):
    tool = tools(add_numbers)
    # As Letta: a new source alone leaves the schema be (services/tool_schema_generator.py,
    # generate_schema_for_tool_update: "no schema updates (don't parse docstring)").
    changed = inspect.getsource(add_numbers).replace("b (int): The second number.", "b (int): The number to add.")
    updated = client.tools.update(tool.id, source_code=changed)
    assert client.tools.retrieve(tool.id).source_code == changed
    assert updated.json_schema == tool.json_schema

    schema = {**tool.json_schema, "description": "Add two integers."}
    updated = client.tools.update(tool.id, json_schema=schema)
    assert updated.json_schema["description"] == "Add two integers."
    assert client.tools.retrieve(tool.id).json_schema == schema


def test_the_model_calls_a_custom_tool(client, tools, model):
    tool = tools(add_numbers)
    agent = agent_with(client, tool.id)
    try:
        model.enqueue(Reply(tool_calls=[call("add_numbers", a=2, b=5)]), Reply(text="It is 7."))
        response = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "2 + 5?"}])

        # The model was offered the tool with its derived schema.
        offered = {t["function"]["name"]: t["function"] for t in model.requests[0]["tools"]}
        assert offered["add_numbers"]["parameters"]["properties"]["a"]["type"] == "integer"
        calls = by_type(response.messages, "tool_call_message")
        assert calls[0].tool_call.name == "add_numbers"
        assert json.loads(calls[0].tool_call.arguments) == {"a": 2, "b": 5}
        returns = by_type(response.messages, "tool_return_message")
        assert len(returns) == 1
        assert returns[0].status == "success" and returns[0].tool_return == "2 + 5 = 7"
        assert returns[0].tool_call_id == calls[0].tool_call.tool_call_id
        assert [m.content for m in by_type(response.messages, "assistant_message")] == ["It is 7."]
        # The model's second call saw the return, answering its call.
        tool_messages = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
        assert tool_messages[-1]["tool_call_id"] == calls[0].tool_call.tool_call_id
        assert "2 + 5 = 7" in str(tool_messages[-1]["content"])
    finally:
        client.agents.delete(agent.id)


def test_attach_and_detach(client, agent, tools, model):
    tool = tools(add_numbers)
    client.agents.tools.attach(tool.id, agent_id=agent.id)
    assert "add_numbers" in [t.name for t in client.agents.tools.list(agent.id)]

    model.enqueue(Reply(tool_calls=[call("add_numbers", a=1, b=1)]), Reply(text="2"))
    response = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "1 + 1?"}])
    assert [r.tool_return for r in by_type(response.messages, "tool_return_message")] == ["1 + 1 = 2"]

    client.agents.tools.detach(tool.id, agent_id=agent.id)
    assert "add_numbers" not in [t.name for t in client.agents.tools.list(agent.id)]
    model.enqueue(Reply(text="no tools"))
    client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "again"}])
    assert "add_numbers" not in [t["function"]["name"] for t in model.requests[-1].get("tools", [])]


def test_a_tool_that_raises(client, tools, model):
    tool = tools(explode)
    agent = agent_with(client, tool.id)
    try:
        model.enqueue(Reply(tool_calls=[call("explode", fuse="a spark")]), Reply(text="That failed."))
        response = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "light it"}])

        [failed] = by_type(response.messages, "tool_return_message")
        assert failed.status == "error"
        assert failed.tool_return == "Error executing function explode: ValueError: boom after a spark"
        # The model reads the error (Letta's packaged return, status "Failed") and answers; the turn ends normally.
        packaged = json.loads(model.requests[1]["messages"][-1]["content"])
        assert packaged["status"] == "Failed" and packaged["message"] == failed.tool_return
        assert [m.content for m in by_type(response.messages, "assistant_message")] == ["That failed."]
        assert response.stop_reason.stop_reason == "end_turn"
    finally:
        client.agents.delete(agent.id)


@letta_defect(
    "its default local sandbox ignores a tool's pip_requirements: they are installed only into a venv, and "
    "a venv is used only when the sandbox config sets use_venv, off by default (services/tool_sandbox/"
    "local_sandbox.py, run(): `if use_venv: ... _prepare_venv`, else sys.executable), so the import fails "
    "with ModuleNotFoundError"
)
def test_pip_requirements(client, agent, tools):
    tool = tools(camelize, pip_requirements=[{"name": "inflection"}])
    assert [r.name for r in tool.pip_requirements] == ["inflection"]
    client.agents.tools.attach(tool.id, agent_id=agent.id)

    result = client.agents.tools.run("camelize", agent_id=agent.id, args={"words": "durable_agent_server"})
    assert result.status == "success", result
    assert result.func_return == "DurableAgentServer"


def test_run_a_tool_of_an_agent(client, agent, tools):
    tool = tools(add_numbers)
    client.agents.tools.attach(tool.id, agent_id=agent.id)
    result = client.agents.tools.run("add_numbers", agent_id=agent.id, args={"a": 40, "b": 2})
    assert result.status == "success" and result.func_return == "40 + 2 = 42"

    with pytest.raises(letta_client.NotFoundError):
        client.agents.tools.run("no_such_tool", agent_id=agent.id, args={})


def test_run_tool_from_source(client):
    # POST /v1/tools/run (Letta's run_tool_from_source, as the ADE's tool editor runs a draft) has no
    # method in letta-client 1.x: the raw call. Letta answers a ToolReturnMessage of no call.
    source = textwrap.dedent(inspect.getsource(add_numbers)).replace("    return", "    print('adding')\n    return")
    answer = client.post("/v1/tools/run", cast_to=object, body={"source_code": source, "args": {"a": 3, "b": 4}})
    assert answer["message_type"] == "tool_return_message"
    assert answer["status"] == "success" and answer["tool_return"] == "3 + 4 = 7"
    assert "adding" in "".join(answer["stdout"])
    assert [(r["tool_return"], r["status"]) for r in answer["tool_returns"]] == [("3 + 4 = 7", "success")]
    # Nothing was stored.
    assert "add_numbers" not in [t.name for t in client.tools.list(name="add_numbers")]

    failing = textwrap.dedent(inspect.getsource(explode))
    answer = client.post("/v1/tools/run", cast_to=object, body={"source_code": failing, "args": {"fuse": "x"}})
    assert answer["status"] == "error" and "ValueError: boom after x" in answer["tool_return"]


def test_run_tool_from_source_shows_returns_as_python_does(client):
    source = textwrap.dedent(inspect.getsource(shapes))
    answer = client.post("/v1/tools/run", cast_to=object, body={"source_code": source, "args": {"n": 2}})
    # Letta sends `str(func_return)`: Python's repr of what is not a string.
    assert answer["tool_return"] == "{'n': 2, 'twice': [2, 2], 'even': True, 'none': None}"


def test_list_retrieve_delete(client, tools):
    tool = tools(add_numbers)
    assert [t.id for t in client.tools.list(name="add_numbers")] == [tool.id]
    assert tool.id in [t.id for t in client.tools.list(limit=1000)]
    fetched = client.tools.retrieve(tool.id)
    assert fetched.name == "add_numbers" and fetched.source_code == tool.source_code

    client.tools.delete(tool.id)
    with pytest.raises(letta_client.NotFoundError):
        client.tools.retrieve(tool.id)
    assert list(client.tools.list(name="add_numbers")) == []


@letta_defect(
    "deleting a tool that is not there is a 400: services/tool_manager.py, delete_tool_by_id_async turns "
    "NoResultFound into ValueError('Tool with id … not found.'), which app.py answers 400"
)
def test_deleting_a_deleted_tool_is_not_found(client, tools):
    tool = tools(add_numbers)
    client.tools.delete(tool.id)
    with pytest.raises(letta_client.NotFoundError):
        client.tools.delete(tool.id)


def test_a_syntax_error_is_refused(client):
    with pytest.raises(letta_client.BadRequestError) as raised:
        client.tools.create(source_code="def broken(x: int) -> str:\n    return (x\n", source_type="python")
    assert raised.value.status_code == 400
    assert not list(client.tools.list(name="broken"))


def test_a_parameter_without_a_description_is_refused(client):
    source = textwrap.dedent(inspect.getsource(undocumented))
    with pytest.raises(letta_client.BadRequestError) as raised:
        client.tools.create(source_code=source, source_type="python")
    assert "x" in str(raised.value.body)
