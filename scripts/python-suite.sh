#!/usr/bin/env bash
# The Python suite (test/python): pytest with Letta's official Python client, in a project-local
# virtual environment made from PyPI (.venv-python-suite, remade when requirements.txt changes).
# Against this server by default, built first; LETTA_SUITE_SERVER=letta runs it against Letta's own
# 0.16.8 (scripts/letta-server.sh). Arguments go to pytest (e.g. -k stream, --junitxml=out.xml).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv-python-suite
requirements=test/python/requirements.txt
if ! cmp -s "$requirements" "$venv/requirements.txt" 2>/dev/null; then
  echo "python-suite: creating $venv from PyPI" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/requirements.txt"
fi

if [ "${LETTA_SUITE_SERVER:-this}" = this ]; then
  echo "python-suite: building the server (tsc)" >&2
  npm run --silent build
fi
cd test/python
exec "../../$venv/bin/python" -m pytest "$@"
