#!/usr/bin/env bash
# Letta's own server, its last release (letta 0.16.8 from PyPI), as the reference the Python suite runs
# against beside ours, wired to a local OpenAI-compatible model endpoint.
#
#   bash scripts/letta-server.sh --port 8390 --openai-base-url http://127.0.0.1:8399/v1 --data-dir DIR \
#     [--setting MCP_DISABLE_STDIO=false ...]
#   bash scripts/letta-server.sh --install-only
#   bash scripts/letta-server.sh --python test/python/letta_own_tests.py this REPORT.xml
#
# Install (once per machine, in LETTA_REFERENCE_DIR, default ~/.cache/letta-temporal/letta-0.16.8):
# Python 3.11 (the one Letta's own Docker image runs), Letta's dependencies at the versions of the
# uv.lock in its PyPI sdist (today's newest releases of them are not what 0.16.8 was tested with),
# and a migrated PostgreSQL data directory to copy for each new server.
# Why PostgreSQL, and which one: 0.16.8 has no SQLite engine any more (letta/server/db.py always
# connects to LETTA_PG_URI), it needs pgvector, and Debian 12 has no pgvector package; so it runs a
# PostgreSQL 16 + pgvector of its own from the `pgserver` wheel, in DIR/pg, on a free loopback port.
# Its schema comes from the alembic migrations in the sdist (the wheel has none).
# Letta's own tests: the sdist's tests/ (the release commit's) in DIR/tests, and the pytest plugins its
# uv.lock pins for them in the same environment, since they import letta; `--python ARGS` runs that
# environment's Python with LETTA_REFERENCE_DIR set (test/python/letta_own_tests.py).
#
# Run: everything Letta keeps is in DIR (HOME=DIR, so ~/.letta is DIR/.letta; its PostgreSQL is
# DIR/pg); an empty or missing DIR starts fresh, a used one is reused. Letta execs in the foreground;
# its PostgreSQL gets SIGINT (fast shutdown) when Letta's process ends, however it ends (pdeathsig).
# Letta sees a clean environment: only the settings below and those given with --setting, so no
# provider or telemetry key of the caller's reaches it, and a proxy that refuses every connection
# stands in for the internet.
set -euo pipefail

version=0.16.8
ref_dir="${LETTA_REFERENCE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/letta-temporal/letta-$version}"
venv="$ref_dir/venv"
template="$ref_dir/pgdata-template"

say() { echo "letta-server: $*" >&2; }
die() { say "$*"; exit 1; }

port=8283 base_url="" data_dir="" install_only=false pristine=false python_args=() settings=()
while [ $# -gt 0 ]; do
  case "$1" in
    --python) shift; python_args=("$@"); [ $# -gt 0 ] || die "--python needs arguments"; break ;;
    --port) port="$2"; shift 2 ;;
    --openai-base-url) base_url="$2"; shift 2 ;;
    --data-dir) data_dir="$2"; shift 2 ;;
    --setting) settings+=("$2"); shift 2 ;;
    --install-only) install_only=true; shift ;;
    --pristine) pristine=true; shift ;;
    *) die "unknown argument: $1" ;;
  esac
done

# PostgreSQL refuses to run as root: as root it runs in a user namespace of its own, where it is
# nobody to itself but still root to the files (so DIR and the cache under /root stay readable).
as_pg=(); [ "$(id -u)" -ne 0 ] || as_pg=(unshare --user)
free_port() { "$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# PostgreSQL's programs in the pgserver wheel (installed without its Python side's dependencies).
pg_bin() { echo "$("$venv/bin/python" -c 'import importlib.util as u, os; print(os.path.dirname(u.find_spec("pgserver").origin))')/pginstall/bin"; }

# Starts PostgreSQL on data folder $1 in the background and waits until it answers on port $pgport.
# It gets SIGINT (fast shutdown) when this shell's process ends, or the Letta it becomes by exec:
# so it must be this process's own child (a simple command, not a function or a $(...) in the background).
start_pg() {
  local pgdata="$1" bin
  bin="$(pg_bin)" pgport="$(free_port)"
  "${as_pg[@]}" setpriv --pdeathsig INT "$bin/postgres" -D "$pgdata" -h 127.0.0.1 -p "$pgport" -k '' \
    -c synchronous_commit=off >>"$pgdata/../postgres.log" 2>&1 &
  for _ in $(seq 1 60); do
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$pgport" -U letta && return
    sleep 0.5
  done
  die "PostgreSQL did not start (see $pgdata/../postgres.log)"
}

# The machine's offline wheel folder has none of Letta's dependencies: PyPI itself.
pip() { env -u PIP_FIND_LINKS -u PIP_NO_INDEX "$venv/bin/pip" -q "$@"; }

# Extracts the given paths of the sdist (pyproject.toml, tests, …) into $ref_dir/src.
from_sdist() {
  pip download --no-deps --no-binary :all: "letta==$version" -d "$ref_dir/sdist" &&
    tar -xzf "$ref_dir/sdist/letta-$version.tar.gz" -C "$ref_dir/src" --strip-components=1 "${@/#/letta-$version/}" &&
    rm -rf "$ref_dir/sdist"
}

install() {
  say "installing letta==$version in $ref_dir (a few minutes)"
  rm -rf "$ref_dir" && mkdir -p "$ref_dir/src"
  "${LETTA_PYTHON:-python3.11}" -m venv "$venv"
  pip install uv==0.13.9
  from_sdist pyproject.toml uv.lock alembic.ini alembic
  # psycopg2 would build from source; Letta runs on asyncpg and its migrations on pg8000.
  (cd "$ref_dir/src" && "$venv/bin/uv" export -q --frozen --no-hashes --no-dev --no-emit-project \
    --extra server --extra postgres --no-emit-package psycopg2 -o "$ref_dir/requirements.txt")
  local uv_pip=("$venv/bin/uv" pip install -q --compile-bytecode --python "$venv/bin/python")
  "${uv_pip[@]}" -r "$ref_dir/requirements.txt"
  "${uv_pip[@]}" --no-deps "letta==$version" pgserver==0.1.4

  say "migrating a template database"
  "${as_pg[@]}" "$(pg_bin)/initdb" -D "$template" -U letta --auth=trust -E UTF8 --no-locale >/dev/null
  start_pg "$template"
  "$(pg_bin)/psql" -q -h 127.0.0.1 -p "$pgport" -U letta -d postgres -c 'CREATE DATABASE letta'
  "$(pg_bin)/psql" -q -h 127.0.0.1 -p "$pgport" -U letta -d letta -c 'CREATE EXTENSION vector'
  (cd "$ref_dir/src" && env HOME="$ref_dir/src" LETTA_PG_URI="postgresql://letta@127.0.0.1:$pgport/letta" \
    "$venv/bin/alembic" upgrade head >"$ref_dir/migrate.log" 2>&1) || die "migration failed: $ref_dir/migrate.log"
  "${as_pg[@]}" "$(pg_bin)/pg_ctl" -D "$template" -m fast -w stop >/dev/null
  touch "$ref_dir/.complete"
}

# Called in a `||` list, where errexit is off: each step only after the one before it succeeded.
install_tests() {
  say "installing Letta's own tests in $ref_dir/tests"
  rm -rf "$ref_dir/src/tests" "$ref_dir/tests" && from_sdist tests && mv "$ref_dir/src/tests" "$ref_dir/tests" &&
    (cd "$ref_dir/src" && "$venv/bin/uv" export -q --frozen --no-hashes --no-emit-project --extra dev) |
    grep -E '^(pytest|pytest-asyncio|pytest-order|pytest-mock|iniconfig|pluggy)==' >"$ref_dir/test-requirements.txt" &&
    "$venv/bin/uv" pip install -q --python "$venv/bin/python" -r "$ref_dir/test-requirements.txt" &&
    touch "$ref_dir/.tests-complete"
}

mkdir -p "$(dirname "$ref_dir")"
(flock 9; [ -f "$ref_dir/.complete" ] || install; [ -f "$ref_dir/.tests-complete" ] || install_tests) 9>"$ref_dir.lock"
$install_only && { say "installed: $ref_dir"; exit 0; }
[ ${#python_args[@]} -eq 0 ] || LETTA_REFERENCE_DIR="$ref_dir" exec "$venv/bin/python" "${python_args[@]}"

[ -n "$base_url" ] || die "--openai-base-url is required"
data_dir="${data_dir:-$(mktemp -d -t letta-reference.XXXXXX)}"
mkdir -p "$data_dir" && data_dir="$(cd "$data_dir" && pwd)"
[ -f "$data_dir/pg/PG_VERSION" ] || cp -a "$template" "$data_dir/pg"
start_pg "$data_dir/pg"

# One change to Letta, a fix of its own defect (none with --pristine): Letta makes an AsyncOpenAI client
# per model call and never closes it (letta/llm_api/openai_client.py); when the garbage collector takes
# one, openai's AsyncHttpxClientWrapper.__del__ schedules its aclose(), which unregisters the fd number
# of its long-closed socket from the event loop: whatever socket has that number by then (often a new
# asyncpg connection) is never woken, and its request waits out asyncpg's 60 s connect timeout, at
# random. Without that __del__, the collector just closes the sockets.
# Models at a base URL other than OpenAI's are Letta's `openai-proxy/<id>` (schemas/providers/openai.py):
# the suite names them so on Letta (test/python/conftest.py).
launcher='
import sys
from openai._base_client import AsyncHttpxClientWrapper
if sys.argv.pop(1) != "--pristine":
    del AsyncHttpxClientWrapper.__del__
from letta.main import app
sys.argv[0] = "letta"
app()
'
cd "$data_dir" # Letta reads ./.env and ./conf.yaml from its working folder: this one has neither
say "Letta $version on http://127.0.0.1:$port (data $data_dir, PostgreSQL port $pgport, model $base_url)"
exec env -i \
  PATH="$venv/bin:/usr/local/bin:/usr/bin:/bin" HOME="$data_dir" LANG=C.UTF-8 \
  LETTA_PG_URI="postgresql://letta@127.0.0.1:$pgport/letta" \
  OPENAI_API_KEY="${OPENAI_API_KEY:-sk-letta-reference}" OPENAI_BASE_URL="$base_url" \
  HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost,::1 \
  http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 no_proxy=127.0.0.1,localhost,::1 \
  DD_TRACE_ENABLED=false DD_INSTRUMENTATION_TELEMETRY_ENABLED=false "${settings[@]}" \
  "$venv/bin/python" -c "$launcher" "$($pristine && echo --pristine || echo --patched)" \
  server --host 127.0.0.1 --port "$port"
