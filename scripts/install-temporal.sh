#!/usr/bin/env bash
# Puts the Temporal CLI (dev server with the Web UI compiled in) in the project's tools folder,
# .tools/bin/temporal, from a cache outside the clone (TEMPORAL_CLI_CACHE, default
# ~/.cache/letta-temporal) that fresh clones on the same machine reuse.
#
# The quickest way first: the official release archive for this platform, its SHA-256 checked against
# the release's checksums.txt (TEMPORAL_CLI_DOWNLOAD_URL points at a mirror of the releases). Where
# downloads are blocked that fails within seconds, and the CLI is built with `go install` instead
# (Go >= 1.25 on PATH, at /usr/local/go or GO_BIN; the Go module proxy; a few minutes, once).
# v1.5.1 is the newest tag `go install` can build: later tags carry `replace` directives in go.mod.
set -euo pipefail

version=1.5.1
root=$(cd "$(dirname "$0")/.." && pwd)
cache_dir="${TEMPORAL_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/letta-temporal}/temporal-$version"
target="${TEMPORAL_CLI_BIN_DIR:-$root/.tools/bin}/temporal"
releases="${TEMPORAL_CLI_DOWNLOAD_URL:-https://github.com/temporalio/cli/releases/download}"

say() { echo "install-temporal: $*" >&2; }
# shellcheck source=scripts/go-build.sh
source "$root/scripts/go-build.sh"

platform() {
  local os arch
  os=$(uname -s | tr '[:upper:]' '[:lower:]')
  case "$(uname -m)" in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) return 1 ;;
  esac
  echo "${os}_${arch}"
}

# Downloads the release archive into $1 and checks it; fails (quickly when offline) with the reason.
download() {
  local into=$1 plat archive progress
  plat=$(platform) || { say "no release archive for $(uname -m)"; return 1; }
  archive="temporal_cli_${version}_${plat}.tar.gz"
  # A progress bar on a terminal; on a pipe (the server's log) only errors.
  if [ -t 2 ]; then progress=--progress-bar; else progress=-sS; fi
  local fetch=(curl -fL --retry 2 --connect-timeout 5)
  say "downloading Temporal CLI $version ($archive) from $releases"
  "${fetch[@]}" -sS --max-time 30 -o "$into/checksums.txt" "$releases/v$version/checksums.txt" || {
    say "could not download checksums.txt (offline, or downloads blocked?)"
    return 1
  }
  local expected
  expected=$(awk -v name="$archive" '$2 == name { print $1 }' "$into/checksums.txt")
  [ -n "$expected" ] || { say "checksums.txt lists no $archive"; return 1; }
  "${fetch[@]}" "$progress" --max-time 600 -o "$into/$archive" "$releases/v$version/$archive" || {
    say "could not download $archive"
    return 1
  }
  local actual
  actual=$(sha256sum "$into/$archive" 2>/dev/null || shasum -a 256 "$into/$archive")
  actual=${actual%% *}
  if [ "$actual" != "$expected" ]; then
    say "checksum mismatch for $archive: expected $expected, got $actual; not using it"
    return 1
  fi
  tar -xzf "$into/$archive" -C "$into" temporal || { say "$archive holds no temporal binary"; return 1; }
  say "checksum verified ($expected)"
}

# Builds the CLI with Go into $1, saying every 30 s that it still builds and, at the end, how long it took.
build() {
  local into=$1 go_bin
  go_bin=$(go_binary)
  if [ ! -x "$go_bin" ]; then
    say "Go is not installed either (looked on PATH and at /usr/local/go/bin/go)."
    say "Fix: put a temporal binary on PATH or set TEMPORAL_CLI_PATH (https://docs.temporal.io/cli),"
    say "     allow downloads from $releases, or install Go >= 1.25."
    return 1
  fi
  say "building Temporal CLI $version with $("$go_bin" version) (a few minutes, once)"
  GOBIN="$into" CGO_ENABLED=0 GOFLAGS=-trimpath timed_go_build "$go_bin" install \
    -ldflags "-s -w -X github.com/temporalio/cli/temporalcli.Version=$version" \
    "github.com/temporalio/cli/cmd/temporal@v$version"
}

if [ ! -x "$cache_dir/temporal" ]; then
  rm -rf "$cache_dir.tmp" && mkdir -p "$cache_dir.tmp"
  if ! download "$cache_dir.tmp"; then
    say "falling back to a build with Go"
    build "$cache_dir.tmp"
  fi
  rm -f "$cache_dir.tmp"/*.tar.gz "$cache_dir.tmp/checksums.txt"
  rm -rf "$cache_dir" && mv "$cache_dir.tmp" "$cache_dir"
fi

mkdir -p "$(dirname "$target")"
ln -sfn "$cache_dir/temporal" "$target"
"$target" --version
