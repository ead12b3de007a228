"""The Python suite's fixtures: a model stub, the server under test wired to it, Letta's official client.

The server is chosen by LETTA_SUITE_SERVER:
  this   (default) this repository's built server, `node dist/src/main.js`, on its embedded defaults
         (PGlite and a `temporal server start-dev` of its own) unless LETTA_SUITE_DATABASE_URL names a
         PostgreSQL database;
  letta  Letta's own server, 0.16.8 from PyPI (scripts/letta-server.sh installs and starts it).
Both run on free ports with their state in a temporary folder, and are stopped after the session.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from letta_client import AsyncLetta, Letta

from model_stub import ModelStub

ROOT = Path(__file__).resolve().parents[2]
TARGET = os.environ.get("LETTA_SUITE_SERVER", "this")
MODEL = "openai/gpt-4o-mini"
EMBEDDING = "openai/text-embedding-3-small"
START_TIMEOUT_S = float(os.environ.get("LETTA_SUITE_START_TIMEOUT_S", "240"))
ON_LETTA = TARGET == "letta"


def letta_defect(reason: str) -> pytest.MarkDecorator:
    """A test Letta 0.16.8 fails because of a defect of its own; `reason` cites Letta's code or behaviour.

    Strict: should Letta pass it after all, the mark is wrong and the run says so.
    """
    return pytest.mark.xfail(ON_LETTA, reason=f"Letta 0.16.8: {reason}", strict=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(data_dir: Path, port: int, model_url: str) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    if TARGET == "letta":
        command = ["bash", str(ROOT / "scripts/letta-server.sh"), "--port", str(port)]
        return command + ["--openai-base-url", model_url, "--data-dir", str(data_dir)], env
    if TARGET != "this":
        raise pytest.UsageError(f"LETTA_SUITE_SERVER is 'this' or 'letta', not {TARGET!r}")
    env.update(
        PORT=str(port),
        DATA_DIR=str(data_dir),
        TEMPORAL_PORT=str(free_port()),
        TEMPORAL_UI_PORT=str(free_port()),
        OPENAI_BASE_URL=model_url,
        TASK_QUEUE_PREFIX=f"py-{uuid.uuid4().hex[:8]}-",
    )
    if os.environ.get("LETTA_SUITE_DATABASE_URL"):
        env["DATABASE_URL"] = os.environ["LETTA_SUITE_DATABASE_URL"]
    return ["node", str(ROOT / "dist/src/main.js")], env


def wait_until_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"{url}/v1/health/", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    tail = log.read_text(errors="replace")[-4000:]
    raise RuntimeError(f"the {TARGET} server did not become healthy at {url}:\n{tail}")


@pytest.fixture(scope="session")
def stub() -> Iterator[ModelStub]:
    model = ModelStub()
    model.url = model.start()  # type: ignore[attr-defined]
    yield model
    model.stop()


@pytest.fixture(scope="session")
def base_url(stub: ModelStub) -> Iterator[str]:
    data_dir = Path(tempfile.mkdtemp(prefix=f"letta-suite-{TARGET}-"))
    data_dir.chmod(0o755)  # this server's sandbox uid (nobody, when run as root) reads the tools' venvs in it
    port = free_port()
    command, env = server_command(data_dir, port, stub.url)  # type: ignore[attr-defined]
    log = data_dir / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, process, log)
        yield url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if os.environ.get("LETTA_SUITE_KEEP_DATA") != "1":
            shutil.rmtree(data_dir, ignore_errors=True)


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
    try:
        client.agents.delete(created.id)
    except Exception:  # the test may have deleted it
        pass
