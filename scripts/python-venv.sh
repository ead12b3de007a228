#!/usr/bin/env bash
# Runs the Python suite's interpreter with the given arguments, after making its project-local virtual
# environment from PyPI when it is missing or test/python/requirements.txt changed (.venv-python-suite:
# Letta's official client, pytest). Used by the suite (scripts/python-suite.sh) and the side-by-side
# bench (npm run bench:letta). PYTHON_VENV and PYTHON_REQUIREMENTS (relative to the repository) name
# another environment made the same way: schemathesis's (test/openapi-conformance.test.ts).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/${PYTHON_VENV:-.venv-python-suite}"
requirements="$root/${PYTHON_REQUIREMENTS:-test/python/requirements.txt}"
if ! cmp -s "$requirements" "$venv/requirements.txt" 2>/dev/null; then
  echo "python-venv: creating $venv from PyPI" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/requirements.txt"
fi
exec "$venv/bin/python" "$@"
