"""
The sandbox's one way out: a loopback port inside the sandbox's own network namespace, forwarded to
this server's API socket bound into the sandbox. The socket takes scoped access tokens only, so the
port reaches the API as the call's token allows and nothing else; the namespace has no other route.

    python3 -I api_bridge.py <socket> <port> <command...>

Listens on 127.0.0.1:<port> before anything else runs (a tool connecting at once finds it), forks
the forwarder, and execs the command in this process, which stays the sandbox's main process: when
it ends, the sandbox's PID namespace ends and the forwarder with it. Standard library only; one
thread, so the fork is safe.
"""
import os
import selectors
import socket
import sys

CHUNK = 65536


def forward(listener, path):
    selector = selectors.DefaultSelector()
    peers = {}

    def close(conn):
        """A connection ends both ways at once: its peer closes with it."""
        for end in (conn, peers.pop(conn)):
            peers.pop(end, None)
            selector.unregister(end)
            end.close()

    selector.register(listener, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            conn = key.fileobj
            if conn is listener:
                client, _ = listener.accept()
                api = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    api.connect(path)
                except OSError:
                    client.close()
                    api.close()
                    continue
                peers[client], peers[api] = api, client
                selector.register(client, selectors.EVENT_READ)
                selector.register(api, selectors.EVENT_READ)
                continue
            # Its peer may have closed it earlier in this same round of events.
            if conn not in peers:
                continue
            try:
                data = conn.recv(CHUNK)
                if data:
                    peers[conn].sendall(data)
                    continue
            except OSError:
                pass
            close(conn)


def main():
    path, port, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork() == 0:
        # The command's pipes are not the forwarder's to hold open.
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.closerange(3, listener.fileno())
        os.closerange(listener.fileno() + 1, os.sysconf("SC_OPEN_MAX"))
        try:
            forward(listener, path)
        finally:
            os._exit(0)
    listener.close()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
