"""
A warm runner: started once inside the sandbox, it reads jobs as JSON lines on stdin and runs each as
one call in a sandbox of its own, so that a call costs neither a sandbox nor an interpreter start, and
nothing one call leaves reaches the next.

Per call, a child forked from the runner, the call's keeper, creates new user, mount, PID and IPC
namespaces. Its child, PID 1 there, mounts fresh tmpfs on /tmp, /work and /dev/shm (the rest of the
file system is read-only) and a fresh /proc, drops every capability, rehearses, and waits for the job,
which it runs as runner.py does. When that process exits the kernel kills every other process of its
PID namespace, however detached (setsid, double fork, nohup), and the keeper's wait for it returns only
once they are all gone; the runner takes its next job only after that. Files, processes, environment,
patched modules and SysV IPC objects of a call thus end with it.

A call is torn down after its reply, then the next one set up while the runner waits for its job:
neither is on a call's path unless jobs come at once. The call's stdout and stderr go to files in the
runner's own /tmp (opened before the fork: the call's fresh /tmp hides them from it), watched against
the output limit. The first line on fd 3 is {"ready": true} once the first call could be set up; then one JSON
line per job: {"result": <runner's result text or null>, "stdout", "stderr": {"head", "tail", "cut"},
"stopped": "output" | "result" | null, "code", "signal": <how the call's process ended; null once it
answered>, "unavailable": <why the call's sandbox could not be set up, or null>}.
Timeouts and cancellation are the server's: it kills this whole process.
Standard library only; runs inside the sandbox.
"""
import ctypes
import json
import os
import select
import shutil
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runner  # noqa: E402 - after the path: -I leaves the script's folder out

WATCH_SECONDS = 0.01
WARM_UP = {"source": "def warm_up(a: int) -> int:\n    return a\n", "args": {"a": 1}, "return_char_limit": 10}
READY = b"ready"

LIBC = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID = 0x20000, 0x8000000, 0x10000000, 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x2, 0x4, 0x8
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
CAPABILITY_VERSION_3 = 0x20080522
# The only places a call may write; each gets a fresh tmpfs per call.
WRITABLE = ("/tmp", "/work", "/dev/shm")
MAX_FD = os.sysconf("SC_OPEN_MAX")
KILLED = signal.SIGKILL  # the wait status of a process killed by SIGKILL


def checked(status, what):
    if status != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]


def isolate():
    """Moves this process into new user, mount and IPC namespaces; its next child starts a new PID one."""
    uid, gid = os.getuid(), os.getgid()
    checked(LIBC.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def fresh_mounts(tmp_bytes):
    flags = ctypes.c_ulong(MS_NOSUID | MS_NODEV)
    for path in WRITABLE:
        size = f"size={tmp_bytes}".encode()
        checked(LIBC.mount(b"tmpfs", path.encode(), b"tmpfs", flags, size), f"mount {path}")
    proc_flags = ctypes.c_ulong(MS_NOSUID | MS_NODEV | MS_NOEXEC)
    checked(LIBC.mount(b"proc", b"/proc", b"proc", proc_flags, None), "mount /proc")


def drop_capabilities():
    """The call holds every capability in its user namespace: without them it cannot undo its mounts."""
    checked(LIBC.capset(ctypes.byref(CapHeader(CAPABILITY_VERSION_3, 0)), (CapData * 2)()), "capset")
    checked(LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def close_fds_but(keep):
    """Closes every descriptor above 2 but those in `keep`."""
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, MAX_FD)


def read_all(fd):
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    return data


class Call:
    """One call, set up ahead of its job: its keeper, capture files, and pipes to the process that runs it."""

    def __init__(self, number, settings):
        self.capture = f"/tmp/.capture-{number}"
        os.mkdir(self.capture, 0o700)
        outputs = [
            os.open(os.path.join(self.capture, name), os.O_WRONLY | os.O_CREAT, 0o600)
            for name in ("stdout", "stderr")
        ]
        job_read, self.job_write = os.pipe()
        self.result_read, result_write = os.pipe()
        report_read, report_write = os.pipe()
        self.keeper = os.fork()
        if self.keeper == 0:
            keep(report_write, (job_read, result_write, *outputs), settings)
        for fd in (job_read, result_write, report_write, *outputs):
            os.close(fd)
        self.reports = os.fdopen(report_read, "rb")
        self.pidfd = None
        self.unavailable = None
        self.status = None
        self.set_up = False

    def wait_set_up(self):
        """Waits until the call's process waits for its job; returns why it does not, if so."""
        if not self.set_up:
            self.set_up = True
            said = self.reports.readline().decode().strip()
            if not said.startswith("ready "):
                self.unavailable = said or "the call's keeper died while setting it up"
            else:
                try:
                    self.pidfd = os.pidfd_open(int(said.split()[1]))
                except ProcessLookupError:
                    self.unavailable = "the call's process died before its job"
        return self.unavailable

    def serve(self, line, settings):
        unavailable = self.wait_set_up()
        if unavailable:
            return {"unavailable": unavailable}
        try:
            os.write(self.job_write, line)
        except BrokenPipeError:
            pass  # it died: supervise sees it
        os.close(self.job_write)
        result, stopped, ended = self.supervise(settings)
        # Its end is waited for only when it died or gave no result (the wait status then says how).
        status = self.wait_gone() if ended or not result else None
        return {
            "result": result.decode("utf-8", "replace") or None,
            "stdout": self.captured("stdout", settings["keep_output"]),
            "stderr": self.captured("stderr", settings["keep_output"]),
            "stopped": stopped,
            "code": os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None,
        }

    def supervise(self, settings):
        """Reads the result until the call closes it or its process ends; stops it past its limits."""
        result, stopped, ended = bytearray(), None, False
        while not stopped:
            ready, _, _ = select.select([self.pidfd, self.result_read], [], [], WATCH_SECONDS)
            if self.result_read in ready:
                chunk = os.read(self.result_read, 65536)
                if not chunk:
                    break
                result += chunk
                if len(result) > settings["max_result"]:
                    stopped = "result"
            if self.pidfd in ready:
                ended = True
                break
            if self.output_size() > settings["max_output"]:
                stopped = "output"
        # The answer is complete (or the call stopped): what still runs goes, a patched exit say, and with
        # the call's PID 1 every other process of the call.
        self.kill()
        while not stopped and (chunk := os.read(self.result_read, 65536)):
            result += chunk
            if len(result) > settings["max_result"]:
                stopped = "result"
        if not stopped and self.output_size() > settings["max_output"]:
            stopped = "output"  # it printed past the limit, then ended before the next look
        return bytes(result), stopped, ended

    def kill(self):
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait_gone(self):
        """The wait status of the call's process, once it and so every process of the call are gone."""
        if self.status is None:
            said = self.reports.readline().decode().split()
            if said[:1] == ["exit"]:
                self.status = int(said[1])
            else:
                # The keeper was killed: its parent-death signal kills the call's process, and so the rest.
                select.select([self.pidfd], [], [])
                self.status = KILLED
        return self.status

    def output_size(self):
        return sum(os.path.getsize(os.path.join(self.capture, n)) for n in ("stdout", "stderr"))

    def captured(self, name, keep):
        """The head and tail of what the call wrote to `name`, `keep` bytes at most, and how many were cut."""
        with open(os.path.join(self.capture, name), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size <= keep:
                return {"head": f.read(keep).decode("utf-8", "replace"), "tail": "", "cut": 0}
            head = f.read(keep // 2)
            f.seek(size - (keep - keep // 2))
            tail = f.read(keep - keep // 2)
        text = {part: data.decode("utf-8", "replace") for part, data in (("head", head), ("tail", tail))}
        return {**text, "cut": size - keep}

    def clean_up(self):
        """Returns once every process of the call is gone; its files go too."""
        if self.pidfd is not None:
            self.kill()
            self.wait_gone()
            os.close(self.pidfd)
        self.reports.close()
        os.waitpid(self.keeper, 0)
        os.close(self.result_read)
        shutil.rmtree(self.capture, ignore_errors=True)


def keep(report, call_fds, settings):
    """
    The call's keeper: makes its namespaces and forks the process that runs it, then says on `report`
    "ready <its pid>" once that process waits for its job (or why it does not), and "exit <its wait
    status>" once it, and so every process of the call, is gone.
    """
    close_fds_but({report, *call_fds})  # the runner's own: its replies, earlier calls' pipes
    try:
        isolate()
        ready_read, ready_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_read)
            os.close(report)
            try:
                run_call(ready_write, *call_fds, settings)
            finally:
                os._exit(1)  # never on into the keeper's code
        os.close(ready_write)
        for fd in call_fds:
            os.close(fd)
        said = read_all(ready_read) or b"the call's process died while being set up"
        line = f"ready {pid}".encode() if said == READY else said.replace(b"\n", b" ")
        os.write(report, line + b"\n")
        os.write(report, f"exit {os.waitpid(pid, 0)[1]}\n".encode())
    except BaseException as error:  # noqa: BLE001 - the runner learns why, whatever it was
        os.write(report, f"the call's sandbox could not be set up: {error}\n".encode())
    os._exit(0)


def run_call(ready, job_read, result_write, stdout, stderr, settings):
    """PID 1 of the call's namespaces: sets them up, says so on `ready`, then runs the job."""
    try:
        LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # a killed keeper ends the call
        fresh_mounts(settings["tmp_bytes"])
        os.chdir("/work")
        drop_capabilities()
        # Its own session and process group: a tool's kill(0, …) reaches only the call's processes.
        os.setsid()
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the runner's stdin carries the next jobs
        # A rehearsal while no call waits: after fork, each page the runner touches first is copied (slow
        # on VMs); touching them now keeps those copies off the call's path.
        json.dumps(runner.run(WARM_UP))
        os.write(ready, READY)
    except BaseException as error:  # noqa: BLE001 - the runner learns why, whatever it was
        os.write(ready, f"the call's sandbox could not be set up: {error}".encode())
        os._exit(1)
    os.close(ready)
    with os.fdopen(job_read, "rb") as jobs:
        job = json.loads(jobs.read())
    for fd, output in ((1, stdout), (2, stderr), (3, result_write)):
        os.dup2(output, fd)
    close_fds_but({3})  # only 0 to 3 stay: closing 1 to 3 is the answer's end
    os.environ.clear()
    os.environ.update(job.get("env", {}))
    runner.apply_limits(job.get("limits"))
    result = runner.run(job)
    if os.getpid() == 1:  # a process the tool forked does not report
        sys.stdout.flush()
        sys.stderr.flush()
        runner.send(result, None)
        for fd in (1, 2, 3):
            os.close(fd)  # the answer is complete: the runner need not wait for this exit
    os._exit(0)


def main():
    settings = json.loads(sys.argv[1])
    replies = os.fdopen(3, "wb", buffering=0)
    number = 0
    call = Call(number, settings)
    unavailable = call.wait_set_up()
    if unavailable:
        advice = "warm runners need user namespaces inside the sandbox; SANDBOX_WARM_POOL_SIZE=0 does without"
        sys.exit(f"{unavailable} ({advice})")
    replies.write(json.dumps({"ready": True}).encode() + b"\n")
    for line in sys.stdin.buffer:
        reply = call.serve(line, settings)
        replies.write(json.dumps(reply).encode() + b"\n")
        # Gone first, then the next set up: a call's leftovers (a fork bomb's processes, its memory) are
        # never counted against the next.
        call.clean_up()
        number += 1
        call = Call(number, settings)


if __name__ == "__main__":
    main()
