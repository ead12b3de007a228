"""
Runs one tool call (Letta's execution contract). Reads the job as JSON on stdin:
{"source", "args", "return_char_limit", "limits"?, "agent_state"?, "agent_id"?, "marker"?}; defines the
source's functions, calls the last one with the arguments, and writes {"status", "func_return",
"func_return_chars"?, "agent_state"} as JSON apart from the tool's own stdout and stderr: on fd 3, or,
where only stdout exists (remote sandboxes), framed on stdout as marker + length (8 hex digits) + md5
hex + payload, all ASCII (E2B decodes stdout as text).
Standard library only; runs inside the sandbox.
"""
import ast
import json
import os
import resource
import sys
import traceback

LIMITS = {
    "cpu_seconds": resource.RLIMIT_CPU,
    "address_space_bytes": resource.RLIMIT_AS,
    "file_size_bytes": resource.RLIMIT_FSIZE,
    "open_files": resource.RLIMIT_NOFILE,
    "processes": resource.RLIMIT_NPROC,
}


def apply_limits(limits):
    for name, value in (limits or {}).items():
        resource.setrlimit(LIMITS[name], (value, value))


class Block:
    def __init__(self, fields):
        self.__dict__.update(fields)


class Memory:
    """The part of Letta's Memory that tools use, over a snapshot of the agent's blocks."""

    def __init__(self, blocks):
        self.blocks = [Block(b) for b in blocks]

    def list_block_labels(self):
        return [b.label for b in self.blocks]

    def get_block(self, label):
        for block in self.blocks:
            if block.label == label:
                return block
        labels = ", ".join(self.list_block_labels())
        raise KeyError(f"Block field {label} does not exist (available sections = {labels})")

    def update_block_value(self, label, value):
        if not isinstance(value, str):
            raise ValueError("Provided value must be a string")
        block = self.get_block(label)
        if getattr(block, "read_only", False):
            raise ValueError(f"Block {label} is read-only")
        block.value = value


class AgentState:
    """A snapshot of the agent for tools that take `agent_state`; block edits are written back."""

    def __init__(self, snapshot):
        fields = {k: v for k, v in snapshot.items() if k != "memory"}
        self.__dict__.update(fields)
        self.memory = Memory(snapshot.get("memory", {}).get("blocks", []))


def last_function(source):
    functions = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
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


def return_text(value):
    """The return as the server writes it (stringifyReturn in tool-returns.ts): None, a string, or JSON."""
    if value is None:
        return "None"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def capped(value, limit):
    """
    The return as sent back, and its text's length when that passes the tool's return_char_limit: only its
    first `limit` characters then leave the sandbox (the server adds Letta's truncation note).
    """
    text = return_text(value)
    if len(text) <= limit:
        return value, None
    return text[:limit], len(text)


def outcome(status, value, job, agent_state):
    func_return, chars = capped(value, job["return_char_limit"])
    result = {"status": status, "func_return": func_return, "agent_state": agent_state}
    if chars is not None:
        result["func_return_chars"] = chars
    return result


CO_COROUTINE = 0x80


def parameters(function):
    """The function's parameter names, read off its code object (importing inspect costs ~20 ms)."""
    code = function.__code__
    return code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]


def call(function, args, job, agent_state):
    if "agent_state" in parameters(function):
        args["agent_state"] = agent_state
    if "agent_id" in parameters(function):
        args["agent_id"] = job.get("agent_id")
    if function.__code__.co_flags & CO_COROUTINE:
        import asyncio  # only here: importing it costs more than running a small tool

        return asyncio.run(function(**args))
    return function(**args)


def edited_blocks(agent_state):
    if agent_state is None:
        return None
    return {"memory": {"blocks": [{"label": b.label, "value": b.value} for b in agent_state.memory.blocks]}}


def letta_client():
    """Letta's `client` for the tool: the official client (`letta_client`, when the tool's environment
    has it) built from LETTA_API_KEY, with LETTA_BASE_URL when set; None without either."""
    if not os.environ.get("LETTA_API_KEY"):
        return None
    try:
        from letta_client import Letta
    except ImportError:
        return None
    base_url = os.environ.get("LETTA_BASE_URL")
    return Letta(api_key=os.environ["LETTA_API_KEY"], **({"base_url": base_url} if base_url else {}))


def run(job):
    name = "tool"
    agent_state = AgentState(job["agent_state"]) if job.get("agent_state") else None
    try:
        name = last_function(job["source"])
        namespace = {"__name__": "__letta_tool__", "client": letta_client()}
        exec(compile(job["source"], "<tool>", "exec"), namespace)
        value = call(namespace[name], dict(job.get("args", {})), job, agent_state)
        return outcome("success", portable(value), job, edited_blocks(agent_state))
    except BaseException as error:  # noqa: BLE001 - every failure of the tool is its result
        traceback.print_exc()
        message = f"Error executing function {name}: {type(error).__name__}: {error}"
        return outcome("error", message, job, None)


def send(result, marker):
    payload = json.dumps(result).encode()
    if marker is None:
        with os.fdopen(3, "wb") as channel:
            channel.write(payload)
        return
    import hashlib  # only here: local runs answer on fd 3

    frame = f"{marker}{len(payload):08x}{hashlib.md5(payload).hexdigest()}".encode()
    sys.stdout.buffer.write(frame + payload)
    sys.stdout.buffer.flush()


def main():
    job = json.load(sys.stdin)
    apply_limits(job.get("limits"))
    runner = os.getpid()
    result = run(job)
    if os.getpid() != runner:
        os._exit(0)  # a process the tool forked: only the runner reports
    sys.stdout.flush()
    sys.stderr.flush()
    send(result, job.get("marker"))


if __name__ == "__main__":
    main()
