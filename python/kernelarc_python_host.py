"""kernelarc interpreter host: imports torch once, then forks a process per Python script run.

Usage: kernelarc_python_host.py SOCKET IDLE_SECONDS

Importing torch costs 1-2 s of CPU on a CPU machine and more with CUDA, and kernelarc runs many
short scripts (the oracle per problem, the graph tracer, the KernelBench importer), often from
separate kernelarc processes. This host binds SOCKET, detaches (the process that started it
exits 0 once requests can queue), imports torch and serves: each connection asks for one
script run; the host forks, and the child becomes that script as `python SCRIPT ARGS...` would
run it, with torch already in sys.modules, and ends as that would, less the interpreter's
teardown (end_child). A child never sees another's state: it is a fork of the host, which runs
no script itself. The host's environment is the one every child gets, so
src/oracle/python_host.cpp keys hosts by interpreter, this file and the whole environment.

A request is one message: a 4-byte big-endian length, then JSON
  {"argv": [SCRIPT, ARG...], "cwd": DIR, "fds": [[CHILD_FD, INDEX], ...]}
with the passed descriptors as SCM_RIGHTS (INDEX: their position there). The replies are JSON
lines: {"pid": N} once the child runs (it leads its own process group), then {"exit": CODE} or
{"signal": NUMBER} when it ends, with "max_rss_kib": its peak resident size (what tells a
process the kernel killed for memory); or {"error": TEXT} when it could not be started. When the
requester hangs up before its child ends, the child's process group is killed. The host exits
after IDLE_SECONDS without children or requests, and at once when torch cannot be imported.
"""
import atexit
import fcntl
import gc
import json
import os
import random
import resource
import runpy
import selectors
import signal
import socket
import struct
import sys
import time
import traceback

MAX_FDS = 8
MAX_REQUEST = 1 << 20


class Become(BaseException):
    """Raised in a forked child: unwinds the host's frames, then the child runs the script."""

    def __init__(self, request, fds, host_objects):
        super().__init__()
        self.request = request
        self.fds = fds
        self.host_objects = host_objects

    def run(self):
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for thing in self.host_objects:
            thing.close()
        os.setpgid(0, 0)
        # Move the passed descriptors out of the way first: a target may be one of their numbers.
        moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in self.fds]
        for fd in self.fds:
            os.close(fd)
        targets = {target: moved[index] for target, index in self.request["fds"]}
        sys.stdout.flush()
        sys.stderr.flush()
        for target, fd in targets.items():
            os.dup2(fd, target)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd in set(moved) | {null}:
            if fd not in targets:
                os.close(fd)
        os.chdir(self.request["cwd"])
        # A fresh interpreter seeds these from the system; forks of one host would share a state.
        random.seed()
        numpy_random = sys.modules.get("numpy.random")
        if numpy_random is not None:
            numpy_random.seed()
        script = os.path.abspath(self.request["argv"][0])
        sys.argv = list(self.request["argv"])
        sys.path[0] = os.path.dirname(script)
        code = 0
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exiting:
            code = exit_code(exiting)
        except BaseException as error:  # noqa: BLE001  (reported as the interpreter would)
            # From the script's first frame on, as a fresh interpreter shows it: the host's
            # frames and runpy's are not the script's.
            frames = error.__traceback__
            while frames is not None and frames.tb_frame.f_code.co_filename != script:
                frames = frames.tb_next
            traceback.print_exception(type(error), error, frames)
            code = 1
        end_child(code)


def exit_code(exiting):
    """The status a fresh interpreter exits with for this SystemExit (printing what it prints)."""
    if exiting.code is None:
        return 0
    if isinstance(exiting.code, int):
        return exiting.code
    print(exiting.code, file=sys.stderr)
    return 1


def end_child(code):
    """Ends a child as the interpreter's shutdown would (threads joined, atexit handlers run,
    stdout and stderr flushed), but without tearing the interpreter down: freeing every object of
    a fork of the host writes to most of the pages it shares with the host, and copying them took
    a child 0.9-1.5 s to exit on the CPU machine, against 0.05 s this way. Other files a script
    leaves open are not flushed for it; kernelarc's scripts close or flush theirs."""
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # pylint: disable=protected-access  (what shutdown calls)
    atexit._run_exitfuncs()  # pylint: disable=protected-access
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # closed or broken: a fresh interpreter would lose that output too
    os._exit(code & 0xFF)  # the status byte, as exit() keeps of any code


def send_line(conn, message):
    try:
        conn.sendall((json.dumps(message) + "\n").encode())
    except OSError:
        pass  # the requester is gone; its child is killed when its hang-up is seen


def receive_request(conn):
    """The request and its descriptors; raises ValueError for a malformed one."""
    conn.settimeout(10)
    data, fds, _flags, _address = socket.recv_fds(conn, 65536, MAX_FDS)
    try:
        if len(data) < 4:
            raise ValueError("a request starts with its 4-byte length")
        (length,) = struct.unpack(">I", data[:4])
        if length > MAX_REQUEST:
            raise ValueError(f"a request of {length} bytes is too long")
        body = data[4:]
        while len(body) < length:
            more = conn.recv(length - len(body))
            if not more:
                raise ValueError("the request ended early")
            body += more
        request = json.loads(body)
        if not isinstance(request.get("argv"), list) or not request["argv"]:
            raise ValueError("a request names the script in argv")
        for _target, index in request.get("fds", []):
            if not 0 <= index < len(fds):
                raise ValueError(f"descriptor index {index} was not passed")
        request.setdefault("fds", [])
        request.setdefault("cwd", "/")
        return request, fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def peer_uid(conn):
    credentials = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", credentials)[1]


def serve(listener, idle_seconds):
    selector = selectors.DefaultSelector()
    wake_read, wake_write = socket.socketpair()
    wake_read.setblocking(False)
    wake_write.setblocking(False)
    signal.set_wakeup_fd(wake_write.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_read, selectors.EVENT_READ, "reap")
    children = {}  # pid -> the requester's connection
    idle_since = time.monotonic()
    while True:
        idle = time.monotonic() - idle_since
        events = selector.select(None if children else max(0.0, idle_seconds - idle))
        # A request that queued while the time ran out is served: its sender is waiting.
        if not events and not children and time.monotonic() - idle_since >= idle_seconds:
            break
        for key, _events in events:
            if key.data == "accept":
                conn, _ = listener.accept()
                if peer_uid(conn) != os.getuid():
                    conn.close()
                    continue
                try:
                    request, fds = receive_request(conn)
                except (OSError, ValueError) as error:
                    send_line(conn, {"error": f"malformed request: {error}"})
                    conn.close()
                    continue
                if len(os.listdir("/proc/self/task")) != 1:
                    # A fork of a threaded process may hold a lock forever: exec a fresh one.
                    send_line(conn, {"error": "the host has threads and cannot fork safely"})
                    for fd in fds:
                        os.close(fd)
                    conn.close()
                    continue
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    owned = [selector, listener, wake_read, wake_write, conn]
                    owned += [child_conn for child_conn in children.values()]
                    raise Become(request, fds, owned)
                try:
                    os.setpgid(pid, pid)
                except OSError:
                    pass  # the child did it first
                for fd in fds:
                    os.close(fd)
                children[pid] = conn
                conn.setblocking(False)
                selector.register(conn, selectors.EVENT_READ, pid)
                send_line(conn, {"pid": pid})
            elif key.data == "reap":
                try:
                    while wake_read.recv(4096):
                        pass
                except BlockingIOError:
                    pass
                while children:
                    pid, status, usage = os.wait4(-1, os.WNOHANG)
                    if pid == 0:
                        break
                    conn = children.pop(pid, None)
                    if conn is None:
                        continue
                    ended = ({"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status)
                             else {"exit": os.WEXITSTATUS(status)})
                    ended["max_rss_kib"] = usage.ru_maxrss
                    send_line(conn, ended)
                    selector.unregister(conn)
                    conn.close()
                if not children:
                    idle_since = time.monotonic()
            else:
                # The requester hung up (or spoke out of turn): its child goes with it.
                conn = key.fileobj
                try:
                    data = conn.recv(1)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    try:
                        os.killpg(key.data, signal.SIGKILL)
                    except OSError:
                        pass


def main():
    socket_path, idle_seconds = sys.argv[1], float(sys.argv[2])
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(socket_path)
    except FileNotFoundError:
        pass
    old_mask = os.umask(0o177)
    listener.bind(socket_path)
    os.umask(old_mask)
    listener.listen(64)
    identity = os.stat(socket_path).st_ino
    # Descriptors inherited past the starter (a test runner's or CI's pipes that were not
    # close-on-exec) would keep their readers waiting for as long as the host lives.
    os.closerange(3, listener.fileno())
    os.closerange(listener.fileno() + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    if os.fork() > 0:
        os._exit(0)  # the starter reaps this process: requests can queue from now on
    os.setsid()
    try:
        import torch  # noqa: F401  (the point of the host)
    except BaseException as error:  # noqa: BLE001  (any failure: the requesters run scripts alone)
        print(f"kernelarc python host: cannot import torch: {error}", file=sys.stderr)
        remove_own_socket(socket_path, identity)
        return 3
    # Objects that exist now are never collected: the cyclic collector would otherwise visit
    # them in every child, copying most of the host's pages (0.33 s of CPU per child, 0.08 s
    # with this, on the CPU machine).
    gc.freeze()
    serve(listener, idle_seconds)
    remove_own_socket(socket_path, identity)
    return 0


def remove_own_socket(socket_path, identity):
    # Only this host's socket: a newer host may have taken the path.
    try:
        if os.stat(socket_path).st_ino == identity:
            os.unlink(socket_path)
    except FileNotFoundError:
        pass


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Become as raised:
        child = raised
    # Outside the handler, so that the script's own errors are reported as a fresh
    # interpreter reports them, with nothing of the host's frames in their tracebacks.
    child.with_traceback(None)
    child.run()
