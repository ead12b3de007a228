"""The Python suite's fixtures: a model stub, the server under test wired to it, Letta's official client.

LETTA_SUITE_SERVER chooses the server (servers.py): `this` (default) or `letta`, Letta's own 0.16.8;
LETTA_SUITE_DATABASE_URL puts this server on a PostgreSQL database instead of its embedded PGlite.
"""

from __future__ import annotations

import os
import uuid
from typing import Iterator

import letta_client
import pytest
from letta_client import AsyncLetta, Letta

from model_stub import ModelStub
from servers import TARGETS, free_port, running_server

TARGET = os.environ.get("LETTA_SUITE_SERVER", "this")
ON_LETTA = TARGET == "letta"
# Letta names the models of an OpenAI-compatible endpoint other than OpenAI's `openai-proxy/<id>`
# (letta/schemas/providers/openai.py); its embedding models keep `openai/`, from a list of its own.
MODEL = "openai-proxy/gpt-4o-mini" if ON_LETTA else "openai/gpt-4o-mini"
EMBEDDING = "openai/text-embedding-3-small"


def letta_defect(reason: str) -> pytest.MarkDecorator:
    """A test Letta 0.16.8 fails because of a defect of its own; `reason` cites Letta's code or behaviour.

    Strict: should Letta pass it after all, the mark is wrong and the run says so.
    """
    return pytest.mark.xfail(ON_LETTA, reason=f"Letta 0.16.8: {reason}", strict=True)


def remove(delete, *ids: str) -> None:
    """Deletes what a test made, unless the test deleted it already (a 404; Letta answers some with 400)."""
    for ident in ids:
        try:
            delete(ident)
        except (letta_client.NotFoundError, letta_client.BadRequestError):
            pass


@pytest.fixture(scope="session")
def stub() -> Iterator[ModelStub]:
    model = ModelStub()
    model.start()
    yield model
    model.stop()


# Where this server serves its Prometheus metrics (Letta's serves none; test_metrics.py).
METRICS_PORT = free_port()


@pytest.fixture(scope="session")
def base_url(stub: ModelStub) -> Iterator[str]:
    if TARGET not in TARGETS:
        raise pytest.UsageError(f"LETTA_SUITE_SERVER is one of {TARGETS}, not {TARGET!r}")
    database_url = os.environ.get("LETTA_SUITE_DATABASE_URL")
    with running_server(TARGET, stub.url, database_url, None if ON_LETTA else METRICS_PORT) as url:
        yield url


@pytest.fixture
def model(stub: ModelStub) -> Iterator[ModelStub]:
    """The model stub, with no replies queued and no requests seen."""
    stub.reset()
    yield stub
    stub.reset()


@pytest.fixture(scope="session")
def client(base_url: str) -> Letta:
    # No retries: every answer reaches the test as the server gave it.
    return Letta(base_url=base_url, api_key="unused", max_retries=0, timeout=120)


@pytest.fixture
async def async_client(base_url: str) -> AsyncLetta:
    return AsyncLetta(base_url=base_url, api_key="unused", max_retries=0, timeout=120)


@pytest.fixture
def agent(client: Letta, model: ModelStub):
    """An agent with a human and a persona block, deleted after the test."""
    created = client.agents.create(
        name=f"suite-{uuid.uuid4().hex[:8]}",
        model=MODEL,
        embedding=EMBEDDING,
        memory_blocks=[
            {"label": "human", "value": "Name: Alice"},
            {"label": "persona", "value": "A helpful assistant."},
        ],
    )
    yield created
    remove(client.agents.delete, created.id)
