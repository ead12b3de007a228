"""Letta's own SDK tests, as its 0.16.8 release ships them, run against one server wired to the model stub.

Usage (scripts/letta-parity.sh runs it for both servers, with the Python of Letta's reference install):
  bash scripts/letta-server.sh --python test/python/letta_own_tests.py this|letta REPORT.xml

The tests are the files of `tests/` in the `letta==0.16.8` sdist on PyPI, the same as letta-ai/letta's
release commit b76da9092 (scripts/letta-server.sh puts them in LETTA_REFERENCE_DIR/tests): they import
`letta` itself, so they run in Letta's own environment, with the pytest plugins and the letta-client
(1.7.12) its uv.lock pins. Each run starts the model stub and the server (servers.py), copies the tests
to a fresh folder and runs pytest there with LETTA_SERVER_URL pointing at the server. The tests name
the model `openai/gpt-4o-mini`; Letta names the models of an OpenAI-compatible endpoint other than
OpenAI's `openai-proxy/<id>`, so against Letta that one handle is rewritten in the copy (this server
takes the tests as they are).

NEEDS says which tests need what the stub cannot give (a real model's judgement, a cloud key), and
DIFFERENCES why this server differs where a test passes on Letta and fails here; parity_report.py reads
both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from model_stub import ModelStub
from servers import running_server

# Stdio MCP servers run on both, on the host, as Letta runs them once allowed: Letta refuses them by
# default; this server runs them in a sandbox that shows only the system folders and those named in
# MCP_STDIO_READ_ONLY_PATHS, as an unprivileged user, and the tests' mock MCP server runs on the Python
# of Letta's environment, in the installing user's cache (under /root, closed to others, as root).
SETTINGS = {"letta": {"MCP_DISABLE_STDIO": "false"}, "this": {"MCP_STDIO": "host"}}
# One pytest session each, as Letta's CI runs them (test_sdk_client.py deletes every agent it finds).
SUITES = ["tests/sdk", "tests/test_sdk_client.py", "tests/integration_test_client_side_tools.py"]
MODEL_HANDLE = "openai/gpt-4o-mini"
LETTA_MODEL_HANDLE = "openai-proxy/gpt-4o-mini"

REAL_MODEL = (
    "needs a real model",
    "The test asserts what the model chose to do (call a tool it was asked to call, write what it was "
    "told into a memory block); the stub answers every call with `ok`.",
)
ANTHROPIC = (
    "needs a cloud key",
    "The test names an Anthropic model (`anthropic/…`): it needs Anthropic's API and ANTHROPIC_API_KEY.",
)
OPENAI = (
    "needs a cloud key",
    "The agent's `llm_config` is `LLMConfig.default_config(model_name=\"gpt-4o-mini\")`, whose endpoint is "
    "OpenAI's own: Letta calls OpenAI there, which needs its API and key (this server calls the OpenAI "
    "base URL it is configured with, the stub); then the model must call the MCP tools, as a real one would.",
)
CLIENT_SIDE = "integration_test_client_side_tools::TestClientSideTools::"
CLAUDE = "anthropic/claude-sonnet-4-5-20250929"

#: What a test needs that the stub cannot give, by test id (as parity_report.own_test_name gives it).
NEEDS: dict[str, tuple[str, str]] = {
    "sdk/mcp_servers_test::test_mcp_echo_tool_with_agent": OPENAI,
    "sdk/mcp_servers_test::test_mcp_add_tool_with_agent": OPENAI,
    "sdk/mcp_servers_test::test_mcp_multiple_tools_in_sequence_with_agent": OPENAI,
    "sdk/mcp_servers_test::test_mcp_complex_schema_tool_with_agent": OPENAI,
    "test_sdk_client::test_shared_blocks": REAL_MODEL,
    "test_sdk_client::test_function_return_limit": REAL_MODEL,
    "test_sdk_client::test_function_always_error": REAL_MODEL,
    "test_sdk_client::test_pydantic_inventory_management_tool[True]": REAL_MODEL,
    "test_sdk_client::test_pydantic_inventory_management_tool[False]": REAL_MODEL,
    "test_sdk_client::test_pydantic_task_planning_tool[False]": REAL_MODEL,
    "test_sdk_client::test_include_return_message_types[stream_step]": ANTHROPIC,
    "test_sdk_client::test_include_return_message_types[token_stream]": ANTHROPIC,
    "test_sdk_client::test_include_return_message_types[sync]": ANTHROPIC,
    "test_sdk_client::test_include_return_message_types[async]": ANTHROPIC,
    "test_sdk_client::test_create_agent": ANTHROPIC,
    f"{CLIENT_SIDE}test_client_side_tool_full_flow[{CLAUDE}]": ANTHROPIC,
    f"{CLIENT_SIDE}test_client_tool_overrides_server_tool[{CLAUDE}]": ANTHROPIC,
    f"{CLIENT_SIDE}test_client_side_tool_error_return[{CLAUDE}]": ANTHROPIC,
    f"{CLIENT_SIDE}test_client_side_tool_full_flow[{MODEL_HANDLE}]": REAL_MODEL,
    f"{CLIENT_SIDE}test_client_tool_overrides_server_tool[{MODEL_HANDLE}]": REAL_MODEL,
    f"{CLIENT_SIDE}test_client_side_tool_error_return[{MODEL_HANDLE}]": REAL_MODEL,
}

MASKED_CREDENTIALS = (
    "An MCP server's env values, headers and tokens come back masked here (`****` and at most their last "
    "four characters), so that whoever can read the server list does not read every server's credentials; "
    "Letta returns them in full, and reads a stdio server's env back. A security choice: "
    "`MCP_SHOW_CREDENTIALS=true` returns them in full, as Letta does."
)

#: Tests that pass on Letta 0.16.8 and fail here, by test id: why (a deliberate choice, and the setting
#: that restores Letta's behaviour).
DIFFERENCES: dict[str, str] = {
    "sdk/mcp_servers_test::test_get_specific_mcp_server": MASKED_CREDENTIALS,
    "sdk/mcp_servers_test::test_update_stdio_mcp_server": MASKED_CREDENTIALS,
}


def copy_tests(source: Path, target: str, into: Path) -> None:
    """Letta's `tests/` under `into`, with the model handle Letta needs for the stub's endpoint."""
    shutil.copytree(source, into / "tests")
    if target != "letta":
        return
    for path in (into / "tests").rglob("*.py"):
        text = path.read_text()
        if MODEL_HANDLE in text:
            path.write_text(text.replace(f'"{MODEL_HANDLE}"', f'"{LETTA_MODEL_HANDLE}"'))


def merge(reports: list[Path], into: Path) -> None:
    """The suites' JUnit reports as one."""
    merged = ET.Element("testsuites")
    for report in reports:
        root = ET.parse(report).getroot()
        merged.extend(root.iter("testsuite") if root.tag == "testsuites" else [root])
    ET.ElementTree(merged).write(into, encoding="utf-8", xml_declaration=True)


def run(target: str, report: Path) -> int:
    source = Path(os.environ["LETTA_REFERENCE_DIR"]) / "tests"
    stub = ModelStub()
    stub.start()
    work = Path(tempfile.mkdtemp(prefix=f"letta-own-tests-{target}-"))
    try:
        copy_tests(source, target, work)
        with running_server(target, stub.url, settings=SETTINGS[target]) as url:
            # Only what the tests read: no key of the caller's reaches them (letta.settings reads the
            # environment), and HOME is the folder, where LettaConfig writes.
            env = {"PATH": os.environ["PATH"], "HOME": str(work), "LANG": "C.UTF-8", "LETTA_SERVER_URL": url}
            status, reports = 0, []
            for number, suite in enumerate(SUITES):
                reports.append(work / f"report-{number}.xml")
                command = [sys.executable, "-m", "pytest", suite, "-p", "no:cacheprovider", "-q", "-rfEs"]
                command.append(f"--junitxml={reports[-1]}")
                status = subprocess.run(command, cwd=work, env=env).returncode or status
            merge(reports, report)
            return status
    finally:
        stub.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], Path(sys.argv[2])))
