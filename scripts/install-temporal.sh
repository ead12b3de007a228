#!/usr/bin/env bash
# Puts the Temporal CLI (dev server with the Web UI compiled in) in the project's tools folder,
# .tools/bin/temporal. It is built once per machine with `go install` into a cache outside the clone
# (TEMPORAL_CLI_CACHE, default ~/.cache/letta-temporal), so fresh clones on the same machine reuse it.
# v1.5.1 is the newest tag `go install` can build: later tags carry `replace` directives in go.mod.
# Needs Go >= 1.25 (on PATH or at /usr/local/go) and the Go module proxy; the first build takes minutes.
set -euo pipefail

version=1.5.1
root=$(cd "$(dirname "$0")/.." && pwd)
cache_dir="${TEMPORAL_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/letta-temporal}/temporal-$version"
target="$root/.tools/bin/temporal"

if [ ! -x "$cache_dir/temporal" ]; then
  go_bin=$(command -v go || true)
  [ -n "$go_bin" ] || go_bin=/usr/local/go/bin/go
  if [ ! -x "$go_bin" ]; then
    echo "install-temporal: Go is not installed (looked on PATH and at /usr/local/go/bin/go)." >&2
    echo "Install Go >= 1.25, put a temporal binary on PATH, or set TEMPORAL_CLI_PATH." >&2
    exit 1
  fi
  echo "Building Temporal CLI $version with $("$go_bin" version); the first build takes a few minutes..."
  mkdir -p "$cache_dir.tmp"
  GOBIN="$cache_dir.tmp" CGO_ENABLED=0 GOFLAGS=-trimpath "$go_bin" install \
    -ldflags "-s -w -X github.com/temporalio/cli/temporalcli.Version=$version" \
    "github.com/temporalio/cli/cmd/temporal@v$version"
  rm -rf "$cache_dir" && mv "$cache_dir.tmp" "$cache_dir"
fi

mkdir -p "$(dirname "$target")"
ln -sfn "$cache_dir/temporal" "$target"
"$target" --version
