"""Inside the sandbox: a TCP port on the sandbox's loopback that leads to agen's egress proxy.

The sandbox has its own network namespace with nothing but loopback, so an HTTP client in it
can reach only the sandbox itself. agen binds the proxy's Unix socket into the sandbox; this
bridge listens on 127.0.0.1:PORT there and copies each connection to that socket, and
``HTTP_PROXY`` points clients at it. It runs as PID 1 of the sandbox: it starts the command as
its child, copies connections on threads meanwhile, and exits with the command's exit status, at
which point the kernel ends everything else in the namespace.

Usage: ``python -m agen.sandbox.bridge --socket PATH --port N -- command args...``.
Standard library only: it starts with every sandboxed command that has network.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading

_CHUNK = 65536


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(_CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                s.shutdown(how)


def _carry(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_carry, args=(client, path), daemon=True).start()


def _usage() -> SystemExit:
    print("error: agen bridge: usage: --socket PATH --port N -- command args...", file=sys.stderr)
    return SystemExit(2)


def parse(argv: list[str]) -> tuple[str, int, list[str]]:
    """``--socket PATH --port N -- command...`` -> (path, port, command)."""
    if "--" not in argv:
        raise _usage()
    cut = argv.index("--")
    opts, command = argv[:cut], argv[cut + 1 :]
    values = dict(zip(opts[::2], opts[1::2], strict=False))
    if "--socket" not in values or not values.get("--port", "").isdigit() or not command:
        raise _usage()
    return values["--socket"], int(values["--port"]), command


def run(argv: list[str]) -> None:
    path, port, command = parse(argv)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    pid = os.fork()
    if pid == 0:
        listener.close()
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        try:
            os.execvp(command[0], command)
        except OSError as e:
            print(f"agen sandbox: cannot start {command[0]!r}: {e}", file=sys.stderr)
            os._exit(127)
    quiet = os.open(os.devnull, os.O_RDWR)  # stdin and stdout are the command's: keep no copy
    os.dup2(quiet, 0)
    os.dup2(quiet, 1)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # pass on, then exit with the child
        signal.signal(sig, lambda s, _f: os.kill(pid, s))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
    os._exit(
        os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
    )


if __name__ == "__main__":
    run(sys.argv[1:])
