"""
Writes src/tools/builtin/schemas.json: the JSON schemas Letta 0.16.8 gives its built-in tools, made by
Letta itself from its function sets (load_function_set, as its upsert_base_tools_async does), for the
built-in tools this server has, in the file's order. Runs on the reference Letta's Python:

  bash scripts/letta-server.sh --install-only
  ~/.cache/letta-temporal/letta-0.16.8/venv/bin/python scripts/letta-builtin-schemas.py
  npx prettier --write src/tools/builtin/schemas.json
"""

import importlib
import json
import pathlib
import sys

from letta.constants import LETTA_TOOL_MODULE_NAMES
from letta.functions.functions import load_function_set

TARGET = pathlib.Path(__file__).resolve().parent.parent / "src" / "tools" / "builtin" / "schemas.json"

letta = {}
for module_name in LETTA_TOOL_MODULE_NAMES:
    for name, function in load_function_set(importlib.import_module(module_name)).items():
        letta[name] = function["json_schema"]

ours = json.loads(TARGET.read_text())
missing = [name for name in ours if name not in letta]
if missing:
    sys.exit(f"Letta has no built-in tool named {', '.join(missing)}")
TARGET.write_text(json.dumps({name: letta[name] for name in ours}, indent=2, ensure_ascii=False) + "\n")
print(f"wrote {len(ours)} schemas to {TARGET}")
