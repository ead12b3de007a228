"""
A warm runner: started once inside the sandbox, it reads jobs as JSON lines on stdin and forks a fresh
child per job, so a call costs a fork instead of a sandbox and interpreter start. The child runs the
job as runner.py does, in its own session, working directory, environment and limits, its stdout and
stderr captured in files and watched against the output limit; one JSON line per job goes back on
fd 3: {"result": <runner's result text or null>, "stdout", "stderr", "stopped": "output" | null,
"code": <exit status>}. Timeouts and cancellation are the server's: it kills this whole process.
Standard library only; runs inside the sandbox.
"""
import json
import os
import select
import shutil
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runner  # noqa: E402 - after the path: -I leaves the script's folder out

WATCH_SECONDS = 0.01


def run_child(job, workdir, outputs, result_write):
    os.setsid()
    for fd, output in zip((1, 2), outputs):
        os.dup2(output, fd)
    os.dup2(result_write, 3)
    os.chdir(workdir)
    os.environ.clear()
    os.environ.update(job.get("env", {}))
    runner.apply_limits(job.get("limits"))
    result = runner.run(job)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.getpid() == job["_child"]:
        runner.send(result, None)
    os._exit(0)


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def captured(capture, name, limit):
    with open(os.path.join(capture, name), "rb") as f:
        return f.read(limit).decode("utf-8", "replace")


def output_size(capture):
    return sum(os.path.getsize(os.path.join(capture, name)) for name in ("stdout", "stderr"))


def supervise(pid, result_read, capture, max_output):
    """Reads the child's result while it runs; stops it when its output passes the limit."""
    pidfd = os.pidfd_open(pid)
    result, stopped, reading = b"", None, True
    while True:
        ready, _, _ = select.select([pidfd] + ([result_read] if reading else []), [], [], WATCH_SECONDS)
        if result_read in ready:
            chunk = os.read(result_read, 65536)
            result += chunk
            reading = bool(chunk)
        if pidfd in ready:
            break
        if stopped is None and output_size(capture) > max_output:
            stopped = "output"
            kill_group(pid)
    kill_group(pid)  # what the tool left running; the child, not yet reaped, still holds the group id
    _, status = os.waitpid(pid, 0)
    os.close(pidfd)
    while chunk := os.read(result_read, 65536):
        result += chunk
    return result, stopped, os.waitstatus_to_exitcode(status)


def serve_one(job, number, max_output):
    workdir = f"/work/job-{number}"
    capture = f"/tmp/.capture-{number}"
    os.mkdir(workdir)
    os.mkdir(capture, 0o700)
    # Made before the fork, so the output watch never looks for files the child has yet to open.
    outputs = [os.open(os.path.join(capture, n), os.O_WRONLY | os.O_CREAT, 0o600) for n in ("stdout", "stderr")]
    result_read, result_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(result_read)
        job["_child"] = os.getpid()
        run_child(job, workdir, outputs, result_write)
    os.close(result_write)
    for output in outputs:
        os.close(output)
    try:
        result, stopped, code = supervise(pid, result_read, capture, max_output)
        return {
            "result": result.decode() or None,
            "stdout": captured(capture, "stdout", max_output),
            "stderr": captured(capture, "stderr", max_output),
            "stopped": stopped,
            "code": code,
        }
    finally:
        os.close(result_read)
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(capture, ignore_errors=True)


def main():
    max_output = int(sys.argv[1])
    replies = os.fdopen(3, "wb", buffering=0)
    for number, line in enumerate(sys.stdin.buffer):
        reply = serve_one(json.loads(line), number, max_output)
        replies.write(json.dumps(reply).encode() + b"\n")


if __name__ == "__main__":
    main()
