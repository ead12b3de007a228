#!/usr/bin/env bash
# The Python suite (test/python): pytest with Letta's official Python client (scripts/python-venv.sh).
# Against this server by default, built first; LETTA_SUITE_SERVER=letta runs it against Letta's own
# 0.16.8 (scripts/letta-server.sh). Arguments go to pytest (e.g. -k stream, --junitxml=out.xml).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${LETTA_SUITE_SERVER:-this}" = this ]; then
  echo "python-suite: building the server (tsc)" >&2
  npm run --silent build
fi
cd test/python
exec bash ../../scripts/python-venv.sh -m pytest "$@"
