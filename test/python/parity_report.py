"""The side-by-side page: JUnit reports from this server and from Letta's, as tables.

Usage: parity_report.py THIS.xml LETTA.xml OWN_THIS.xml OWN_LETTA.xml > docs/letta-side-by-side.md
(scripts/letta-parity.sh): the Python suite's two reports, then those of Letta's own tests
(letta_own_tests.py). Exits 3 when one of Letta's own tests passes on Letta and fails here with no
reason recorded in letta_own_tests.DIFFERENCES.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from datetime import date
from importlib.metadata import version

from letta_own_tests import DIFFERENCES, LETTA_MODEL_HANDLE, MODEL_HANDLE, NEEDS, SUITES


def suite_name(case: ET.Element) -> str:
    return f"{case.get('classname')}::{case.get('name')}"


def own_test_name(case: ET.Element) -> str:
    """A test of Letta's as `sdk/blocks_test::test_update[persona_block]`, the same on both servers."""
    parts = (case.get("classname") or "").split(".")
    modules = [p for p in parts if not p[:1].isupper()]
    name = "::".join(["/".join(modules), *[p for p in parts if p[:1].isupper()], case.get("name") or ""])
    # conftest.create_test_module's parameters: the item's name says which, the rest is pytest's numbering
    name = re.sub(r"\[([^\]-]+)-params\d+-[^\]]*\]$", r"[\1]", name)
    return name.replace(LETTA_MODEL_HANDLE, MODEL_HANDLE)


def outcomes(path: str, name_of=suite_name) -> dict[str, tuple[str, str]]:
    """Each test's outcome (passed, failed, Letta defect, skipped) and the reason given for it."""
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = name_of(case)
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        skipped = case.find("skipped")
        if failure is not None:
            found[name] = ("**failed**", (failure.get("message") or "").splitlines()[0][:160])
        elif skipped is not None and skipped.get("type") == "pytest.xfail":
            found[name] = ("Letta defect", skipped.get("message") or "")
        elif skipped is not None:
            found[name] = ("skipped", skipped.get("message") or "")
        else:
            found[name] = ("passed", "")
    return found


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def own_tests(this_path: str, letta_path: str) -> int:
    """The section on Letta's own tests; how many pass on Letta and fail here with no reason recorded."""
    here, letta = outcomes(this_path, own_test_name), outcomes(letta_path, own_test_name)
    names = sorted(set(here) | set(letta))
    needs: list[str] = []

    def shown(result: tuple[str, str], name: str) -> str:
        outcome, why = result
        if name in NEEDS and outcome == "**failed**":
            kind, reason = NEEDS[name]
            if reason not in needs:
                needs.append(reason)
            # What it saw, too: a server can fail such a test before the point a real model would pass.
            return f"{kind} ({needs.index(reason) + 1}): {why[:100]}"
        return f"skipped: {why}" if outcome == "skipped" and why else outcome

    print("\n## Letta's own tests\n")
    print("Letta's SDK tests as its release ships them (the `tests/` of the `letta==0.16.8` sdist, the same ")
    print(f"as letta-ai/letta's commit b76da9092): {', '.join(f'`{s}`' for s in SUITES)}, ")
    print("each suite a pytest session of its own as Letta's CI runs them, in Letta's own environment ")
    print("with the plugins and the client its uv.lock pins (letta-client 1.7.12), against each server ")
    print("with the same model stub (test/python/letta_own_tests.py). The stub answers every model call ")
    print("with a plain `ok`: a test that needs a model to choose a tool or write to memory, or a cloud ")
    print("service's key, is listed as such, not as a failure, on both servers. Against Letta, the tests' ")
    print(f"`{MODEL_HANDLE}` reads `{LETTA_MODEL_HANDLE}`, Letta's handle for a model at another base URL. ")
    print("Both run stdio MCP servers on the host, as the MCP tests need: Letta with `MCP_DISABLE_STDIO=false` ")
    print("(by default it refuses them), this server with `MCP_STDIO=host` (by default it runs them in its ")
    print("sandbox, as an unprivileged user who cannot reach the tests' mock MCP server: it runs on the ")
    print("Python of Letta's environment, in the installing user's cache). They take about 8 of the ")
    print("20 minutes `npm run parity:letta` takes on a 2-core machine (the first run, about 7 more to ")
    print("install Letta and its tests); it is not part of CI.\n")
    passed = lambda results: sum(1 for r, _ in results.values() if r == "passed")
    print(f"This server: {passed(here)} of {len(here)} passed. Letta 0.16.8: {passed(letta)} of {len(letta)} passed.\n")
    print("| test | this server | Letta 0.16.8 |")
    print("| ---- | ----------- | ------------ |")
    for name in names:
        ours, theirs = here.get(name, ("not run", "")), letta.get(name, ("not run", ""))
        print(f"| `{name}` | {cell(shown(ours, name))} | {cell(shown(theirs, name))} |")
    if needs:
        print("\nWhat they need:\n")
        for number, reason in enumerate(needs, 1):
            print(f"{number}. {cell(reason)}")
    differ = [n for n in names if letta.get(n, ("",))[0] == "passed" and here.get(n, ("",))[0] == "**failed**"]
    print("\n### Passes on Letta, fails here\n")
    if not differ:
        print("None.")
    unexplained = 0
    for name in differ:
        why = DIFFERENCES.get(name)
        unexplained += why is None
        print(f"- `{name}`: {cell(why or '**no reason recorded**')} Here: {cell(here[name][1])}")
    return unexplained


def main(this_path: str, letta_path: str, own_this: str | None = None, own_letta: str | None = None) -> int:
    here, letta = outcomes(this_path), outcomes(letta_path)
    names = sorted(set(here) | set(letta))
    passed = lambda results: sum(1 for r, _ in results.values() if r == "passed")
    print("# Letta side by side\n")
    print("Generated by `npm run parity:letta` (scripts/letta-parity.sh): the Python suite (`test/python`, ")
    print(f"letta-client {version('letta-client')}) run against this server and against Letta's own server, ")
    print(f"`letta==0.16.8` from PyPI, each with the same model stub, on {date.today().isoformat()}. ")
    print("Letta runs as published (scripts/letta-server.sh) on a PostgreSQL with pgvector of its own, ")
    print("but for one fix of its own defect, a collected OpenAI client that stalls requests for 60 s at ")
    print("random (the script says how; `--pristine` runs it without). ")
    print("A Letta defect is a test Letta fails for a reason of its own, cited in the test's mark; what ")
    print("this server does differently on purpose is listed in [using-it.md](using-it.md#differences-from-letta).\n")
    print(f"This server: {passed(here)} of {len(here)} passed. Letta 0.16.8: {passed(letta)} of {len(letta)} passed.\n")
    print("| test | this server | Letta 0.16.8 |")
    print("| ---- | ----------- | ------------ |")
    reasons: list[str] = []
    for name in names:
        ours, ours_why = here.get(name, ("not run", ""))
        theirs, theirs_why = letta.get(name, ("not run", ""))
        why = theirs_why or ours_why
        if why:
            if why not in reasons:
                reasons.append(why)
            theirs = f"{theirs} ({reasons.index(why) + 1})"
        print(f"| `{name}` | {ours} | {theirs} |")
    print("\nWhy, as the tests' marks say:\n")
    for number, why in enumerate(reasons, 1):
        print(f"{number}. {cell(why)}")
    return 3 if own_this and own_letta and own_tests(own_this, own_letta) else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
