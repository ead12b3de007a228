#!/usr/bin/env bash
# Runs the Python suite (test/python) and Letta's own SDK tests (test/python/letta_own_tests.py)
# against this server and against Letta's own 0.16.8 (scripts/letta-server.sh installs it once, with
# its tests), and writes the results side by side to docs/letta-side-by-side.md. Exits non-zero when
# the suite has a test that neither passes nor is marked as a Letta defect, or when one of Letta's own
# tests passes on Letta and fails here with no reason recorded (letta_own_tests.DIFFERENCES).
set -uo pipefail
cd "$(dirname "$0")/.."

# The JUnit reports stay in test-artifacts/parity, so the page can be made again from them.
reports=test-artifacts/parity
mkdir -p "$reports"
status=0
for server in this letta; do
  echo "letta-parity: the Python suite against $server" >&2
  LETTA_SUITE_SERVER=$server bash scripts/python-suite.sh -q -p no:cacheprovider \
    --junitxml="$PWD/$reports/$server.xml" "$@" || status=1
done
# Letta's tests fail on both servers where they need a real model or a cloud key: their exit status
# says nothing; the page compares them test by test.
for server in this letta; do
  echo "letta-parity: Letta's own tests against $server" >&2
  bash scripts/letta-server.sh --python test/python/letta_own_tests.py "$server" "$reports/letta-tests-$server.xml"
done
bash scripts/python-venv.sh test/python/parity_report.py "$reports/this.xml" "$reports/letta.xml" \
  "$reports/letta-tests-this.xml" "$reports/letta-tests-letta.xml" >docs/letta-side-by-side.md || status=1
npx prettier --log-level warn --write docs/letta-side-by-side.md || status=1
echo "letta-parity: wrote docs/letta-side-by-side.md" >&2
exit "$status"
