"""The two servers the Python suite and the side-by-side bench run against, each started the same way.

  this   this repository's built server, `node dist/src/main.js`, on its embedded defaults (PGlite and a
         `temporal server start-dev` of its own) unless a PostgreSQL database is named;
  letta  Letta's own server, 0.16.8 from PyPI (scripts/letta-server.sh installs and starts it).

Both run on free ports with their state in a temporary folder, wired to the given model endpoint.
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
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ("this", "letta")
START_TIMEOUT_S = float(os.environ.get("LETTA_SUITE_START_TIMEOUT_S", "240"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(
    target: str,
    data_dir: Path,
    port: int,
    model_url: str,
    database_url: str | None,
    metrics_port: int | None,
    settings: dict[str, str],
) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    if target == "letta":
        command = ["bash", str(ROOT / "scripts/letta-server.sh"), "--port", str(port)]
        command += [arg for name, value in settings.items() for arg in ("--setting", f"{name}={value}")]
        return command + ["--openai-base-url", model_url, "--data-dir", str(data_dir)], env
    if target != "this":
        raise ValueError(f"the server is one of {TARGETS}, not {target!r}")
    env.update(
        PORT=str(port),
        DATA_DIR=str(data_dir),
        TEMPORAL_PORT=str(free_port()),
        TEMPORAL_UI_PORT=str(free_port()),
        OPENAI_BASE_URL=model_url,
        TASK_QUEUE_PREFIX=f"py-{uuid.uuid4().hex[:8]}-",
    )
    if database_url:
        env["DATABASE_URL"] = database_url
    if metrics_port:
        env["METRICS_PORT"] = str(metrics_port)
    env.update(settings)
    return ["node", str(ROOT / "dist/src/main.js")], env


def wait_until_healthy(target: str, url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/v1/health/", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    tail = log.read_text(errors="replace")[-4000:]
    raise RuntimeError(f"the {target} server did not become healthy at {url}:\n{tail}")


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's whole process group (its Temporal server too), SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextmanager
def running_server(
    target: str,
    model_url: str,
    database_url: str | None = None,
    metrics_port: int | None = None,
    settings: dict[str, str] | None = None,
) -> Iterator[str]:
    """The server's base URL once it answers its health check; stopped, and its state removed, after.

    With `metrics_port`, this server serves its Prometheus metrics there (Letta's has no such setting);
    `settings` are more environment variables of the server.
    """
    data_dir = Path(tempfile.mkdtemp(prefix=f"letta-suite-{target}-"))
    data_dir.chmod(0o755)  # this server's sandbox uid (nobody, when run as root) reads the tools' venvs in it
    port = free_port()
    command, env = server_command(target, data_dir, port, model_url, database_url, metrics_port, settings or {})
    log = data_dir / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(target, url, process, log)
        yield url
    finally:
        stop(process)
        if os.environ.get("LETTA_SUITE_KEEP_DATA") != "1":
            shutil.rmtree(data_dir, ignore_errors=True)
