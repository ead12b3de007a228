"""Archival memory: an agent's passages, the model's archival tools, and archives of their own."""

from __future__ import annotations

import uuid

import letta_client
import pytest

from conftest import EMBEDDING, MODEL, remove
from model_stub import Reply, call

ARCHIVAL_TOOLS = ["archival_memory_insert", "archival_memory_search"]


def by_type(messages, message_type):
    return [m for m in messages if m.message_type == message_type]


@pytest.fixture
def archivist(client, model):
    """An agent with the archival tools."""
    created = client.agents.create(
        name=f"suite-archivist-{uuid.uuid4().hex[:8]}",
        model=MODEL,
        embedding=EMBEDDING,
        memory_blocks=[{"label": "persona", "value": "A careful archivist."}],
        tools=ARCHIVAL_TOOLS,
    )
    yield created
    client.agents.delete(created.id)


@pytest.fixture
def archive(client):
    created = client.archives.create(name=f"field-notes-{uuid.uuid4().hex[:8]}", embedding=EMBEDDING)
    yield created
    remove(client.archives.delete, created.id)


def test_insert_list_delete_passages(client, agent):
    (passage,) = client.agents.passages.create(agent.id, text="The lighthouse key is under the blue stone.")
    assert passage.text == "The lighthouse key is under the blue stone."
    assert passage.id.startswith("passage-")

    listed = client.agents.passages.list(agent.id)
    assert [p.id for p in listed] == [passage.id]
    assert [p.id for p in client.agents.passages.list(agent.id, search="lighthouse")] == [passage.id]

    client.agents.passages.delete(passage.id, agent_id=agent.id)
    assert client.agents.passages.list(agent.id) == []


def test_search_ranks_by_meaning_and_filters_by_tag(client, agent):
    client.agents.passages.create(agent.id, text="Puffins nest on the northern cliffs.", tags=["birds"])
    client.agents.passages.create(agent.id, text="The ferry leaves at nine every morning.", tags=["travel"])
    client.agents.passages.create(agent.id, text="Gannets dive for fish near the cliffs.", tags=["birds"])

    found = client.agents.passages.search(agent.id, query="where do puffins nest", top_k=1)
    assert found.count == 1
    assert found.results[0].content == "Puffins nest on the northern cliffs."
    assert found.results[0].tags == ["birds"]

    by_tag = client.agents.passages.search(agent.id, query="cliffs", tags=["travel"])
    assert [r.content for r in by_tag.results] == ["The ferry leaves at nine every morning."]


def test_the_model_inserts_and_searches(client, archivist, model):
    model.enqueue(
        Reply(tool_calls=[call("archival_memory_insert", content="Alice's sister is called Edith.", tags=["family"])]),
        Reply(text="Saved."),
    )
    response = client.agents.messages.create(archivist.id, messages=[{"role": "user", "content": "Remember Edith"}])
    assert [r.status for r in by_type(response.messages, "tool_return_message")] == ["success"]
    assert [p.text for p in client.agents.passages.list(archivist.id)] == ["Alice's sister is called Edith."]

    model.enqueue(Reply(tool_calls=[call("archival_memory_search", query="sister")]), Reply(text="Edith."))
    response = client.agents.messages.create(archivist.id, messages=[{"role": "user", "content": "Who is my sister?"}])
    (found,) = by_type(response.messages, "tool_return_message")
    assert found.status == "success"
    assert "Alice's sister is called Edith." in found.tool_return
    assert "family" in found.tool_return


def test_archives_create_retrieve_list_update(client, archive):
    assert archive.id.startswith("archive-")
    assert archive.embedding_config.embedding_model == "text-embedding-3-small"
    assert client.archives.retrieve(archive.id).name == archive.name
    assert [a.id for a in client.archives.list(name=archive.name)] == [archive.id]
    updated = client.archives.update(archive.id, description="Notes from the field")
    assert updated.description == "Notes from the field"


def test_an_attached_archive_is_searched(client, archive, archivist, model):
    # No inserts yet: the archive is the agent's one archive (Letta allows one per agent).
    passage = client.archives.passages.create(archive.id, text="The tide turns at 4 pm on Sundays.", tags=["tides"])
    assert passage.text == "The tide turns at 4 pm on Sundays."
    client.agents.archives.attach(archive.id, agent_id=archivist.id)
    assert archive.id in [a.id for a in client.archives.list(agent_id=archivist.id)]

    found = client.agents.passages.search(archivist.id, query="when does the tide turn")
    assert [r.content for r in found.results] == ["The tide turns at 4 pm on Sundays."]

    model.enqueue(Reply(tool_calls=[call("archival_memory_search", query="tide")]), Reply(text="4 pm."))
    response = client.agents.messages.create(archivist.id, messages=[{"role": "user", "content": "Tide?"}])
    (result,) = by_type(response.messages, "tool_return_message")
    assert "The tide turns at 4 pm on Sundays." in result.tool_return

    client.agents.archives.detach(archive.id, agent_id=archivist.id)
    assert archive.id not in [a.id for a in client.archives.list(agent_id=archivist.id)]
    assert client.agents.passages.search(archivist.id, query="tide").results == []


def test_archive_passages_batch_and_delete(client, archive):
    made = client.archives.passages.create_many(
        archive.id, passages=[{"text": "First entry."}, {"text": "Second entry.", "tags": ["b"]}]
    )
    assert [p.text for p in made] == ["First entry.", "Second entry."]
    assert all(p.archive_id == archive.id for p in made)
    client.archives.passages.delete(made[0].id, archive_id=archive.id)
    with pytest.raises(letta_client.NotFoundError):
        client.archives.passages.delete(made[0].id, archive_id=archive.id)


def test_delete_an_archive(client, archive):
    client.archives.delete(archive.id)
    with pytest.raises(letta_client.NotFoundError):
        client.archives.retrieve(archive.id)
    assert archive.id not in [a.id for a in client.archives.list()]

