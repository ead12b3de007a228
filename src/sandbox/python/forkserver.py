"""
A warm runner: started once inside the sandbox, it reads jobs as JSON lines on stdin and runs each in a
fresh child forked from it, so a call costs no sandbox or interpreter start. The next child is forked
ahead, while the runner waits for its job, and the last one is reaped after its reply: neither the fork
nor the teardown is on a call's path. The child runs the job as runner.py does, in its own session,
working directory, environment and limits, its stdout and stderr captured in files watched against the
output limit; one JSON line per job goes back on fd 3: {"result": <runner's result text or null>,
"stdout", "stderr", "stopped": "output" | null, "code": <exit status, or null once it answered>}.
Timeouts and cancellation are the server's: it kills this whole process.
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
WARM_UP = {"source": "def warm_up(a: int) -> int:\n    return a\n", "args": {"a": 1}}


class Child:
    """A child forked ahead, in its own session, blocked until its job arrives."""

    def __init__(self, number):
        self.workdir = f"/work/job-{number}"
        self.capture = f"/tmp/.capture-{number}"
        os.mkdir(self.workdir)
        os.mkdir(self.capture, 0o700)
        outputs = [
            os.open(os.path.join(self.capture, name), os.O_WRONLY | os.O_CREAT, 0o600)
            for name in ("stdout", "stderr")
        ]
        job_read, self.job_write = os.pipe()
        self.result_read, result_write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self.job_write)
            os.close(self.result_read)
            run_child(job_read, outputs, result_write, self.workdir)
        for fd in (job_read, result_write, *outputs):
            os.close(fd)
        self.pidfd = os.pidfd_open(self.pid)

    def start(self, line):
        os.write(self.job_write, line)
        os.close(self.job_write)

    def supervise(self, max_output):
        """Reads the result until the child closes it or dies; stops it when its output passes the limit."""
        result, stopped, exited = b"", None, False
        while True:
            ready, _, _ = select.select([self.pidfd, self.result_read], [], [], WATCH_SECONDS)
            if self.result_read in ready:
                chunk = os.read(self.result_read, 65536)
                result += chunk
                if not chunk:
                    break
            if self.pidfd in ready:
                exited = True
                break
            if stopped is None and self.output_size() > max_output:
                stopped = "output"
                kill_group(self.pid)
        kill_group(self.pid)  # what the tool left running; the child, not yet reaped, holds the group id
        while chunk := os.read(self.result_read, 65536):
            result += chunk
        # Reaped now only when it died or gave no result (its exit code then says how it ended).
        code = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1]) if exited or not result else None
        return result, stopped, code

    def output_size(self):
        return sum(os.path.getsize(os.path.join(self.capture, n)) for n in ("stdout", "stderr"))

    def captured(self, name, limit):
        with open(os.path.join(self.capture, name), "rb") as f:
            return f.read(limit).decode("utf-8", "replace")

    def clean_up(self):
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        for fd in (self.pidfd, self.result_read):
            os.close(fd)
        shutil.rmtree(self.workdir, ignore_errors=True)
        shutil.rmtree(self.capture, ignore_errors=True)


def run_child(job_read, outputs, result_write, workdir):
    os.setsid()
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the runner's stdin carries the next jobs
    # A rehearsal while no call waits: after fork, each page the runner touches first is copied (slow
    # on VMs); touching them now keeps those copies off the call's path.
    json.dumps(runner.run(WARM_UP))
    with os.fdopen(job_read, "rb") as jobs:
        job = json.loads(jobs.read())
    for fd, output in zip((1, 2), outputs):
        os.dup2(output, fd)
    os.dup2(result_write, 3)
    for fd in (result_write, *outputs):
        os.close(fd)  # only 1, 2 and 3 stay: closing them is the answer's end
    os.chdir(workdir)
    os.environ.clear()
    os.environ.update(job.get("env", {}))
    runner.apply_limits(job.get("limits"))
    child = os.getpid()
    result = runner.run(job)
    if os.getpid() == child:  # a process the tool forked does not report
        sys.stdout.flush()
        sys.stderr.flush()
        runner.send(result, None)
        for fd in (1, 2, 3):
            os.close(fd)  # the answer is complete: the runner need not wait for this exit
    os._exit(0)


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def serve(child, line, max_output):
    child.start(line)
    result, stopped, code = child.supervise(max_output)
    return {
        "result": result.decode() or None,
        "stdout": child.captured("stdout", max_output),
        "stderr": child.captured("stderr", max_output),
        "stopped": stopped,
        "code": code,
    }


def main():
    max_output = int(sys.argv[1])
    replies = os.fdopen(3, "wb", buffering=0)
    number = 0
    child = Child(number)
    for line in sys.stdin.buffer:
        reply = serve(child, line, max_output)
        replies.write(json.dumps(reply).encode() + b"\n")
        finished, number = child, number + 1
        child = Child(number)
        finished.clean_up()


if __name__ == "__main__":
    main()
