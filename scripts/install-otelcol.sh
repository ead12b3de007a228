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
# shellcheck source=scripts/go-build.sh
source "$root/scripts/go-build.sh"

# Builds the builder, then the Collector with it.
build_collector() {
  local into=$1 go_bin=$2
  GOBIN="$into/bin" CGO_ENABLED=0 "$go_bin" install "go.opentelemetry.io/collector/cmd/builder@v$version" \
    && PATH="$(dirname "$go_bin"):$PATH" CGO_ENABLED=0 "$into/bin/builder" --config "$manifest" \
      --output-path "$into/src"
}

build() {
  local into=$1 go_bin
  go_bin=$(go_binary)
  if [ ! -x "$go_bin" ]; then
    say "Go is not installed (looked on PATH and at /usr/local/go/bin/go): install Go >= 1.24"
    return 1
  fi
  say "building the OpenTelemetry Collector $version with $("$go_bin" version) (several minutes, once)"
  timed_go_build build_collector "$into" "$go_bin" || return
  mv "$into/src/otelcol-letta" "$into/otelcol-letta"
  rm -rf "$into/src" "$into/bin"
}

if [ ! -x "$cache_dir/otelcol-letta" ]; then
  rm -rf "$cache_dir.tmp" && mkdir -p "$cache_dir.tmp"
  build "$cache_dir.tmp"
  rm -rf "$cache_dir" && mv "$cache_dir.tmp" "$cache_dir"
fi

mkdir -p "$(dirname "$target")"
ln -sfn "$cache_dir/otelcol-letta" "$target"
"$target" --version
