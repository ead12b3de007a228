#!/usr/bin/env bash
# Temporal's production server on this host: the server (`temporal-server`, all four services in one
# process) on PostgreSQL persistence with SQL visibility, the way a self-hosted cluster runs, for the
# benches that measure against it (bench/scale-out.ts, `npm run chaos` with CHAOS_TEMPORAL=production)
# and for trying the server on something other than the dev server. docs/operations.md, "Temporal's
# production server", says what differs from the dev server.
#
#   bash scripts/temporal-production.sh start    build (once), set up the databases, start, register
#   bash scripts/temporal-production.sh stop     SIGTERM, then SIGKILL after 30 s
#   bash scripts/temporal-production.sh status   says whether it runs, and where
#   bash scripts/temporal-production.sh build    only the build
#   bash scripts/temporal-production.sh config   prints the server config it starts the server with
#
# The server and `temporal-sql-tool` are built with `go install` from the Go module (Go >= 1.25 on
# PATH, at /usr/local/go or GO_BIN; the module proxy; a few minutes, once) into a cache outside the clone
# (TEMPORAL_SERVER_CACHE, default ~/.cache/letta-temporal) with the module's schema files, and linked
# into .tools/bin (TEMPORAL_SERVER_BIN_DIR). v1.29.1 is the newest release that Go 1.26.8 (this
# machine's) builds as it is: v1.30 and later require go >= 1.26.10 in go.mod, which `go install` meets
# only by fetching another toolchain. It is also the server the Temporal CLI 1.5.1 embeds
# (scripts/install-temporal.sh), so dev server and production server differ in persistence and
# topology only. Its go.mod has no `replace` directive, which `go install` refuses.
#
# Then, each step skipped when done: the databases `temporal` and `temporal_visibility` on PostgreSQL
# (scripts/setup-postgres.sh: 127.0.0.1:5432, user root), their schemas set up and brought up to date
# by temporal-sql-tool, a config in TEMPORAL_PRODUCTION_DIR (default data/temporal-production), the
# server started in the background (its log beside the config), the namespace and the project's search
# attributes registered. Its dynamic config is deploy/temporal/dynamicconfig/dynamic.yaml, the one the
# compose server reads: what the dev server gets by flag (src/temporal/dev-server.ts).
#
# The frontend listens on 127.0.0.1:7433 (TEMPORAL_PRODUCTION_PORT); the other services on the ports
# just above it, and their membership ports 1000 below: none is the dev server's 7233/8233, none is in
# Linux's ephemeral range. The number of history shards (TEMPORAL_NUM_HISTORY_SHARDS, default 4) is
# written into the database at the first start and cannot change after: another number needs new
# databases (`temporal-sql-tool drop-database`, or `dropdb`).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
state_dir="${TEMPORAL_PRODUCTION_DIR:-$root/data/temporal-production}"
port="${TEMPORAL_PRODUCTION_PORT:-7433}"
version=1.29.1
cache_dir="${TEMPORAL_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/letta-temporal}/temporal-server-$version"
bin_dir="${TEMPORAL_SERVER_BIN_DIR:-$root/.tools/bin}"
shards="${TEMPORAL_NUM_HISTORY_SHARDS:-4}"
namespace="${TEMPORAL_NAMESPACE:-default}"
sql_host="${TEMPORAL_SQL_HOST:-127.0.0.1}"
sql_port="${TEMPORAL_SQL_PORT:-5432}"
sql_user="${TEMPORAL_SQL_USER:-root}"
sql_password="${TEMPORAL_SQL_PASSWORD:-}"
# Connections to the history database per service (each of the four has its own pool; visibility's
# pools hold 2): at most 4 x (6 + 2) of PostgreSQL's max_connections, 100 by default.
max_conns="${TEMPORAL_SQL_MAX_CONNS:-6}"
dynamic_config="$root/deploy/temporal/dynamicconfig/dynamic.yaml"
address="127.0.0.1:$port"
pid_file="$state_dir/temporal-server.pid"
log_file="$state_dir/temporal-server.log"
# The project's custom search attributes (contracts/search-attributes.ts), all Keyword.
search_attributes=(LettaAgentId LettaRunId LettaStopReason)

say() { echo "temporal-production: $*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=scripts/go-build.sh
source "$root/scripts/go-build.sh"

build() {
  if [ ! -x "$cache_dir/temporal-server" ] || [ ! -x "$cache_dir/temporal-sql-tool" ]; then
    local go_bin
    go_bin=$(go_binary)
    [ -x "$go_bin" ] || die "Go is not installed (looked on PATH and at /usr/local/go/bin/go): install Go >= 1.25"
    rm -rf "$cache_dir.tmp" && mkdir -p "$cache_dir.tmp"
    say "building Temporal server $version with $("$go_bin" version) (a few minutes, once)"
    GOBIN="$cache_dir.tmp" CGO_ENABLED=0 GOFLAGS=-trimpath timed_go_build "$go_bin" install -ldflags "-s -w" \
      "go.temporal.io/server/cmd/server@v$version" "go.temporal.io/server/cmd/tools/sql@v$version"
    mv "$cache_dir.tmp/server" "$cache_dir.tmp/temporal-server"
    mv "$cache_dir.tmp/sql" "$cache_dir.tmp/temporal-sql-tool"
    # The schema files the tool applies, from the module just built (the module cache may be cleaned).
    local module
    module=$("$go_bin" mod download -json "go.temporal.io/server@v$version" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
    [ -d "$module/schema/postgresql/v12" ] || die "the module has no schema/postgresql/v12 (at $module)"
    mkdir -p "$cache_dir.tmp/schema" && cp -R "$module/schema/postgresql/v12/." "$cache_dir.tmp/schema/"
    chmod -R u+w "$cache_dir.tmp/schema"
    rm -rf "$cache_dir" && mv "$cache_dir.tmp" "$cache_dir"
  fi
  mkdir -p "$bin_dir"
  ln -sfn "$cache_dir/temporal-server" "$bin_dir/temporal-server"
  ln -sfn "$cache_dir/temporal-sql-tool" "$bin_dir/temporal-sql-tool"
}

# temporal-sql-tool on database $1, its log in schema.log (said when it fails).
sql_tool() {
  local db=$1
  shift
  SQL_PASSWORD="$sql_password" "$cache_dir/temporal-sql-tool" --plugin postgres12 --ep "$sql_host" \
    -p "$sql_port" -u "$sql_user" --db "$db" "$@" >>"$state_dir/schema.log" 2>&1 \
    || die "temporal-sql-tool $* on $db failed:$(echo && tail -n 20 "$state_dir/schema.log")"
}

has_schema() {
  PGPASSWORD="$sql_password" psql -h "$sql_host" -p "$sql_port" -U "$sql_user" -d "$1" -tAc \
    "SELECT to_regclass('schema_version') IS NOT NULL" | grep -qx t
}

# Each database: created if missing, its schema set up once and brought up to date at every start.
setup_schema() {
  pg_isready -q -h "$sql_host" -p "$sql_port" || die "PostgreSQL is not reachable on $sql_host:$sql_port (scripts/setup-postgres.sh)"
  mkdir -p "$state_dir"
  local db schema
  for db in temporal temporal_visibility; do
    schema=$([ "$db" = temporal ] && echo temporal || echo visibility)
    PGPASSWORD="$sql_password" psql -h "$sql_host" -p "$sql_port" -U "$sql_user" -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1 \
      || { say "creating the database $db"; sql_tool "$db" create-database; }
    has_schema "$db" || { say "setting up the schema of $db"; sql_tool "$db" setup-schema -v 0.0; }
    sql_tool "$db" update-schema -d "$cache_dir/schema/$schema/versioned"
  done
}

sql_store() {
  cat <<EOF
      sql:
        pluginName: postgres12
        databaseName: $1
        connectAddr: "$sql_host:$sql_port"
        connectProtocol: tcp
        user: "$sql_user"
        password: "$sql_password"
        maxConns: $2
        maxIdleConns: $2
        maxConnLifetime: 1h
EOF
}

service() {
  cat <<EOF
  $1:
    rpc:
      grpcPort: $2
      membershipPort: $(($2 - 1000))
      bindOnLocalHost: true
EOF
}

# The server's config (printed by the `config` subcommand).
server_config() {
  cat <<EOF
# Written by scripts/temporal-production.sh at every start; edit the script, not this file.
log:
  stdout: true
  level: warn
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: $shards
  datastores:
    postgres-default:
$(sql_store temporal "$max_conns")
    postgres-visibility:
$(sql_store temporal_visibility 2)
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
$(service frontend "$port")
      httpPort: $((port + 10))
$(service history $((port + 1)))
$(service matching $((port + 2)))
$(service worker $((port + 3)))
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "$address"
      httpAddress: "127.0.0.1:$((port + 10))"
dcRedirectionPolicy:
  policy: noop
archival:
  history:
    state: disabled
  visibility:
    state: disabled
namespaceDefaults:
  archival:
    history:
      state: disabled
    visibility:
      state: disabled
dynamicConfigClient:
  filepath: "$dynamic_config"
  pollInterval: 10s
EOF
}

running_pid() {
  [ -f "$pid_file" ] || return 1
  local pid
  pid=$(cat "$pid_file")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q temporal-server "/proc/$pid/cmdline" 2>/dev/null \
    && echo "$pid"
}

temporal_cli() { "$root/.tools/bin/temporal" --address "$address" "$@"; }

start() {
  build
  [ -x "$root/.tools/bin/temporal" ] || bash "$root/scripts/install-temporal.sh" >/dev/null
  if pid=$(running_pid); then
    say "already running (pid $pid) on $address"
  else
    setup_schema
    mkdir -p "$state_dir/config" && server_config >"$state_dir/config/production.yaml"
    say "starting Temporal server $version on $address ($shards history shards; log: $log_file)"
    # Its own session: a Ctrl-C in this shell does not reach it.
    setsid "$cache_dir/temporal-server" --root "$state_dir" --config config --env production \
      --allow-no-auth start >>"$log_file" 2>&1 </dev/null &
    echo $! >"$pid_file"
    local deadline=$((SECONDS + 120))
    until temporal_cli operator cluster health >/dev/null 2>&1; do
      running_pid >/dev/null || die "the server exited during start-up:$(echo && tail -n 20 "$log_file")"
      [ "$SECONDS" -lt "$deadline" ] || die "the server did not answer within 120 s ($log_file)"
      sleep 1
    done
  fi
  temporal_cli operator namespace describe -n "$namespace" >/dev/null 2>&1 || {
    say "registering the namespace $namespace"
    temporal_cli operator namespace create -n "$namespace" --retention 7d >/dev/null
  }
  # A namespace just registered reaches the frontend's namespace cache at its next refresh (seconds).
  local listed name deadline=$((SECONDS + 60))
  until listed=$(temporal_cli operator search-attribute list -n "$namespace" 2>/dev/null); do
    [ "$SECONDS" -lt "$deadline" ] || die "the namespace $namespace is not usable after 60 s"
    sleep 1
  done
  for name in "${search_attributes[@]}"; do
    grep -qw "$name" <<<"$listed" || {
      say "registering the search attribute $name"
      temporal_cli operator search-attribute create -n "$namespace" --name "$name" --type Keyword >/dev/null
    }
  done
  # Like a namespace, a search attribute just registered is usable once the cache has it.
  local query
  query=$(printf "%s = '' AND " "${search_attributes[@]}")
  until temporal_cli workflow count -n "$namespace" --query "${query% AND }" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || die "the search attributes are not usable after 60 s"
    sleep 1
  done
  say "ready: TEMPORAL_ADDRESS=$address TEMPORAL_NAMESPACE=$namespace"
}

stop() {
  local pid
  pid=$(running_pid) || { say "not running"; rm -f "$pid_file"; return 0; }
  kill -TERM "$pid"
  for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -0 "$pid" 2>/dev/null && { say "still running after 30 s: SIGKILL"; kill -KILL "$pid"; }
  rm -f "$pid_file"
  say "stopped"
}

case "${1:-start}" in
  build) build && "$cache_dir/temporal-server" --version ;;
  start) start ;;
  stop) stop ;;
  config) server_config ;;
  status)
    if pid=$(running_pid); then say "running (pid $pid) on $address"; else say "not running"; exit 1; fi ;;
  *) die "usage: $0 start|stop|status|build|config" ;;
esac
