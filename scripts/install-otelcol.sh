#!/usr/bin/env bash
# Puts an OpenTelemetry Collector (an OTLP receiver and a file exporter: scripts/otelcol-builder.yaml) in
# the project's tools folder, .tools/bin/otelcol-letta, for the tests that check traces reach a real
# OTLP receiver. Built once with the Collector's own builder from the Go module proxy (Go on PATH, at
# /usr/local/go or GO_BIN; several minutes) into a cache outside the clone (OTELCOL_CACHE, default
# ~/.cache/letta-temporal) that fresh clones on the same machine reuse, as the Temporal CLI is.
set -euo pipefail

version=0.161.0
root=$(cd "$(dirname "$0")/.." && pwd)
manifest="$root/scripts/otelcol-builder.yaml"
cache_dir="${OTELCOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/letta-temporal}/otelcol-$version-$(sha256sum "$manifest" | cut -c1-12)"
target="${OTELCOL_BIN_DIR:-$root/.tools/bin}/otelcol-letta"

say() { echo "install-otelcol: $*" >&2; }

build() {
  local into=$1 go_bin=${GO_BIN:-$(command -v go || echo /usr/local/go/bin/go)}
  if [ ! -x "$go_bin" ]; then
    say "Go is not installed (looked on PATH and at /usr/local/go/bin/go): install Go >= 1.24"
    return 1
  fi
  say "building the OpenTelemetry Collector $version with $("$go_bin" version) (several minutes, once)"
  local started=$SECONDS
  (while sleep 30; do say "still building… $((SECONDS - started)) s"; done) &
  local ticker=$!
  local status=0
  GOBIN="$into/bin" CGO_ENABLED=0 "$go_bin" install "go.opentelemetry.io/collector/cmd/builder@v$version" \
    && PATH="$(dirname "$go_bin"):$PATH" CGO_ENABLED=0 "$into/bin/builder" --config "$manifest" \
      --output-path "$into/src" \
    || status=$?
  kill "$ticker" 2>/dev/null || true
  if [ "$status" -ne 0 ]; then
    say "the build failed (exit $status): is the Go module proxy reachable (GOPROXY)?"
    return "$status"
  fi
  mv "$into/src/otelcol-letta" "$into/otelcol-letta"
  rm -rf "$into/src" "$into/bin"
  say "built in $((SECONDS - started)) s"
}

if [ ! -x "$cache_dir/otelcol-letta" ]; then
  rm -rf "$cache_dir.tmp" && mkdir -p "$cache_dir.tmp"
  build "$cache_dir.tmp"
  rm -rf "$cache_dir" && mv "$cache_dir.tmp" "$cache_dir"
fi

mkdir -p "$(dirname "$target")"
ln -sfn "$cache_dir/otelcol-letta" "$target"
"$target" --version
