"""Scheduled messages (`agents.schedule.*`): a message sent to the agent at a time, or on a cron expression."""

from __future__ import annotations

import time

import letta_client
import pytest

from conftest import letta_defect
from model_stub import Reply

# Letta's self-hosted server has no scheduled messages: routers/v1/agents.py of 0.16.8 defines no
# /v1/agents/{agent_id}/schedule route (they are Letta Cloud's), so every call is a 404.
pytestmark = letta_defect("no /v1/agents/{agent_id}/schedule routes in routers/v1/agents.py (Letta Cloud only)")


def now_ms() -> float:
    return time.time() * 1000


def wait_until(predicate, timeout_s=60.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.25)
    return True


def test_a_one_time_message_fires(client, agent, model):
    model.enqueue(Reply(text="Good morning, Alice."))
    created = client.agents.schedule.create(
        agent.id,
        messages=[{"role": "user", "content": "Wake-up call"}],
        schedule={"type": "one-time", "scheduled_at": now_ms() + 3000},
    )
    assert created.id

    # At its time the agent runs a turn with the message, as if it had been sent then.
    assert wait_until(lambda: any("Wake-up call" in str(r["messages"]) for r in model.requests)), "it never fired"
    assert wait_until(
        lambda: "Good morning, Alice." in [getattr(m, "content", None) for m in client.agents.messages.list(agent.id)]
    )
    runs = client.runs.list(agent_id=agent.id)
    assert any(r.status == "completed" for r in runs)


def test_create_list_retrieve_delete(client, agent):
    created = client.agents.schedule.create(
        agent.id,
        messages=[{"role": "user", "content": "Plan my day"}],
        schedule={"type": "recurring", "cron_expression": "0 9 * * 1-5"},
        max_steps=3,
    )
    assert created.next_scheduled_at

    listed = client.agents.schedule.list(agent.id)
    assert [s.id for s in listed.scheduled_messages] == [created.id]
    assert listed.has_next_page is False

    found = client.agents.schedule.retrieve(created.id, agent_id=agent.id)
    assert found.agent_id == agent.id
    assert found.schedule.cron_expression == "0 9 * * 1-5"
    assert [m.content for m in found.message.messages] == ["Plan my day"]
    assert found.message.max_steps == 3
    assert found.next_scheduled_time

    assert client.agents.schedule.delete(created.id, agent_id=agent.id).success is True
    assert client.agents.schedule.list(agent.id).scheduled_messages == []
    with pytest.raises(letta_client.NotFoundError):
        client.agents.schedule.retrieve(created.id, agent_id=agent.id)


def test_a_deleted_one_time_message_never_fires(client, agent, model):
    created = client.agents.schedule.create(
        agent.id,
        messages=[{"role": "user", "content": "Never sent"}],
        schedule={"type": "one-time", "scheduled_at": now_ms() + 3000},
    )
    client.agents.schedule.delete(created.id, agent_id=agent.id)
    time.sleep(5)
    assert not any("Never sent" in str(r["messages"]) for r in model.requests)


def test_bad_schedules_are_refused(client, agent):
    with pytest.raises((letta_client.BadRequestError, letta_client.UnprocessableEntityError)):
        client.agents.schedule.create(
            agent.id,
            messages=[{"role": "user", "content": "too late"}],
            schedule={"type": "one-time", "scheduled_at": now_ms() - 60_000},
        )
    with pytest.raises((letta_client.BadRequestError, letta_client.UnprocessableEntityError)):
        client.agents.schedule.create(
            agent.id,
            messages=[{"role": "user", "content": "when?"}],
            schedule={"type": "recurring", "cron_expression": "not a cron"},
        )
    assert client.agents.schedule.list(agent.id).scheduled_messages == []
