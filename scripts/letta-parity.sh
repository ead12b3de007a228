#!/usr/bin/env bash
# Runs the Python suite (test/python) against this server and against Letta's own 0.16.8
# (scripts/letta-server.sh installs it once), and writes both results side by side to
# docs/letta-side-by-side.md. Exits non-zero when either run has a test that neither passes nor is
# marked as a Letta defect.
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
bash scripts/python-venv.sh test/python/parity_report.py "$reports/this.xml" "$reports/letta.xml" \
  > docs/letta-side-by-side.md && npx prettier --log-level warn --write docs/letta-side-by-side.md || status=1
echo "letta-parity: wrote docs/letta-side-by-side.md" >&2
exit "$status"
