# Sourced by the install scripts that build a tool with Go (install-temporal.sh, install-otelcol.sh);
# they define `say` first.

# The Go binary: GO_BIN, else `go` on PATH, else /usr/local/go/bin/go.
go_binary() { echo "${GO_BIN:-$(command -v go || echo /usr/local/go/bin/go)}"; }

# Runs a build (the rest of the arguments) saying every 30 s that it still builds and, at the end, how
# long it took; a failure says to check the module proxy and returns the build's status.
timed_go_build() {
  local started=$SECONDS status=0
  (while sleep 30; do say "still building… $((SECONDS - started)) s"; done) &
  local ticker=$!
  "$@" || status=$?
  kill "$ticker" 2>/dev/null || true
  if [ "$status" -ne 0 ]; then
    say "the Go build failed (exit $status): is the Go module proxy reachable (GOPROXY)?"
    return "$status"
  fi
  say "built in $((SECONDS - started)) s"
}
