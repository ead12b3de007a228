#!/usr/bin/env bash
# The MCP conformance suite's client scenarios (@modelcontextprotocol/conformance) against this server's
# MCP client: one built server on its embedded defaults (PGlite, its own Temporal dev server) on free
# ports, then every client scenario the suite lists (MCP_CONFORMANCE_SPEC_VERSION=<revision> keeps only
# those of one revision), each run through scripts/mcp-conformance-client.mjs, judged against
# test/mcp-conformance/expected-failures.yml.
# Needs Node 22 (the suite's own requirement). MCP_CONFORMANCE_NO_BUILD=1 skips the build (CI has just
# built for the Python suite); MCP_CONFORMANCE_JUNIT=<file> writes the counts for .ci/run: a scenario
# passed is a test passed, a failure the baseline expects a skip, any other failure or a baseline entry
# that now passes a failure. Exits non-zero in the last two cases, as the suite does.
set -euo pipefail
cd "$(dirname "$0")/.."

SPEC_VERSION=${MCP_CONFORMANCE_SPEC_VERSION:-}
BASELINE=test/mcp-conformance/expected-failures.yml

# The suite's code does not even load on Node 20 (a syntax error deep in its bundle): say so plainly.
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)' || {
  echo "mcp-conformance: the suite needs Node 22 or newer, this is $(node --version): put" \
    "\$(bash scripts/install-node.sh 22 | tail -n 1) first on PATH" >&2
  exit 1
}

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

if [ "${MCP_CONFORMANCE_NO_BUILD:-}" != 1 ]; then
  echo "mcp-conformance: building the server (tsc)" >&2
  npm run --silent build
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/mcp-conformance.XXXXXX")
chmod 755 "$work"
port=$(free_port)
export LETTA_URL="http://127.0.0.1:$port"
# Its own process group (setsid), so stopping it stops its Temporal dev server too.
PORT=$port DATA_DIR="$work/data" TEMPORAL_PORT=$(free_port) TEMPORAL_UI_PORT=$(free_port) \
  OPENAI_API_KEY=unused TASK_QUEUE_PREFIX="mcp-conformance-$$-" \
  setsid node dist/src/main.js >"$work/server.log" 2>&1 &
server=$!
stop_server() {
  kill -TERM -- "-$server" 2>/dev/null || true
  for _ in $(seq 60); do kill -0 "$server" 2>/dev/null || break; sleep 0.5; done
  kill -KILL -- "-$server" 2>/dev/null || true
  [ "${MCP_CONFORMANCE_KEEP:-}" = 1 ] && echo "mcp-conformance: kept $work" >&2 || rm -rf "$work"
}
trap stop_server EXIT

for _ in $(seq 240); do
  curl -fsS "$LETTA_URL/v1/health/" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { tail -n 40 "$work/server.log" >&2; echo "mcp-conformance: the server died" >&2; exit 1; }
  sleep 0.5
done
curl -fsS "$LETTA_URL/v1/health/" >/dev/null || { tail -n 40 "$work/server.log" >&2; exit 1; }
echo "mcp-conformance: the server answers at $LETTA_URL (${SECONDS}s)" >&2

status=0
# The auth/* scenarios take turns (their servers share one tool name, and tool names are unique here:
# scripts/mcp-conformance-client.mjs), so the last of them waits for all the others: each scenario's
# client gets MCP_CONFORMANCE_TIMEOUT_MS (3 minutes) rather than the suite's 30 s.
npx --no-install conformance client --suite all ${SPEC_VERSION:+--spec-version "$SPEC_VERSION"} \
  --timeout "${MCP_CONFORMANCE_TIMEOUT_MS:-180000}" \
  --command "node scripts/mcp-conformance-client.mjs" --expected-failures "$BASELINE" \
  --output-dir "$work/results" --verbose 2>&1 | tee "$work/suite.log" || status=$?

echo "mcp-conformance: the suite took ${SECONDS}s in all" >&2
# The suite's summary, counted: `✓ name: …` passed, `✗ name: …` failed; the baseline's verdict lists an
# expected failure as `  ~ name`, a stale entry as `  ✓ name`, an unexpected failure as `  ✗ name`.
node - "$work/suite.log" "${MCP_CONFORMANCE_JUNIT:-}" <<'EOF'
const fs = require('fs');
const [log, junit] = process.argv.slice(2);
const lines = fs.readFileSync(log, 'utf8').replace(/\x1b\[[0-9;]*m/g, '').split('\n');
const summary = lines.slice(lines.indexOf('=== SUITE SUMMARY ==='));
const ran = summary.filter((l) => /^[✓✗] \S+: \d+ passed/.test(l));
const listed = (mark) => summary.filter((l) => l.startsWith(`  ${mark} `)).map((l) => l.slice(4));
const expected = listed('~'), stale = listed('✓'), unexpected = listed('✗');
const passed = ran.filter((l) => l.startsWith('✓')).length - stale.length;
const failed = unexpected.length + stale.length;
console.log(`mcp-conformance: ${ran.length} scenarios: ${passed} passed, ${expected.length} expected failures, ` +
  `${unexpected.length} unexpected failures, ${stale.length} stale baseline entries`);
if (junit) {
  const ok = ran.length > 0;
  fs.writeFileSync(junit, `<testsuite name="mcp-conformance" tests="${ok ? ran.length : 1}" ` +
    `failures="${ok ? failed : 1}" errors="0" skipped="${expected.length}"></testsuite>\n`);
}
EOF
exit "$status"
