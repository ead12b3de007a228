"""
Runs one tool call (Letta's execution contract). Reads the job as JSON on stdin:
{"source": ..., "args": {...}}; defines the source's functions, calls the last one with the arguments,
and writes {"status", "func_return"} as JSON on fd 3, apart from the tool's own stdout and stderr.
Standard library only; runs inside the sandbox.
"""
import ast
import json
import os
import sys
import traceback


def last_function_name(source):
    functions = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.FunctionDef)]
    if not functions:
        raise ValueError("No functions found in source code")
    return functions[-1].name


def portable(value):
    """The return as JSON can carry it: itself when it can, else its str()."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return str(value)


def main():
    job = json.load(sys.stdin)
    result_channel = os.fdopen(3, "w")
    name = "tool"
    try:
        name = last_function_name(job["source"])
        namespace = {"__name__": "__letta_tool__"}
        exec(compile(job["source"], "<tool>", "exec"), namespace)
        value = namespace[name](**job.get("args", {}))
        result = {"status": "success", "func_return": portable(value)}
    except BaseException as error:  # noqa: BLE001 - every failure of the tool is its result
        traceback.print_exc()
        result = {
            "status": "error",
            "func_return": f"Error executing function {name}: {type(error).__name__}: {error}",
        }
    sys.stdout.flush()
    json.dump(result, result_channel)
    result_channel.close()


if __name__ == "__main__":
    main()
