#!/usr/bin/env bash
# Puts letta-code (npm @letta-ai/letta-code, Letta's CLI) where the end-to-end test runs it unmodified:
# `npm install` of the package fails (two optional dependencies are missing from the registry), but its
# letta.js is a self-contained bundle that needs only `ws` and sharp's native module beside it. Cached
# outside the clone (LETTA_CODE_CACHE, default ~/.cache/letta-temporal/letta-code-<version>), so fresh
# clones on one machine share it. Prints the path of letta.js.
set -euo pipefail

version=0.25.9
cache_dir="${LETTA_CODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/letta-temporal/letta-code-$version}"
bundle="$cache_dir/package/letta.js"

if [ ! -f "$bundle" ]; then
  work="$cache_dir.tmp"
  rm -rf "$work" && mkdir -p "$work"
  (
    cd "$work"
    npm pack --silent "@letta-ai/letta-code@$version" >/dev/null
    tar -xzf "letta-ai-letta-code-$version.tgz" && rm "letta-ai-letta-code-$version.tgz"
    echo '{"name":"letta-code-runner","private":true}' > package.json
    npm install --silent --no-audit --no-fund ws@8.23.0 @img/sharp-linux-x64@0.34.5 >/dev/null
  ) >&2
  rm -rf "$cache_dir" && mv "$work" "$cache_dir"
fi
echo "$bundle"
