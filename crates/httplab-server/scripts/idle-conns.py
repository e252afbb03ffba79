#!/usr/bin/env python3
"""Open N idle keep-alive connections to a server and report its RSS.

usage: idle-conns.py PORT SERVER_PID N [N2 ...]

Each connection sends one GET and reads the response, so it is a real
keep-alive connection, then stays idle. Source addresses rotate over
127.0.0.2..127.0.0.41 so more than one port range's worth of connections
fits. Prints the server's VmRSS (and its children's) before and after each
step. Bounded: at most the largest N connections, one request each, and a
10 s socket timeout on every operation.
"""
import os, resource, socket, sys

port, pid = int(sys.argv[1]), int(sys.argv[2])
steps = [int(a) for a in sys.argv[3:]]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = max(steps) + 100
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(want, hard)))
except (ValueError, OSError):
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < want:
        sys.exit(f"RLIMIT_NOFILE hard limit {hard} < {want}: raise it (e.g. prlimit) first")

def rss_kib(p):
    tot = 0
    try:
        with open(f"/proc/{p}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    tot += int(line.split()[1])
        with open(f"/proc/{p}/task/{p}/children") as f:
            for c in f.read().split():
                tot += rss_kib(int(c))
    except OSError:
        pass
    return tot

req = b"GET /f87.txt HTTP/1.1\r\nHost: x\r\n\r\n"
conns = []
base = rss_kib(pid)
print(f"idle=0 rss_kib={base}", flush=True)
for target in steps:
    while len(conns) < target:
        i = len(conns)
        s = socket.socket()
        s.settimeout(10)
        s.bind((f"127.0.0.{2 + i % 40}", 0))
        s.connect(("127.0.0.1", port))
        s.sendall(req)
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = s.recv(4096)
            if not chunk:
                raise SystemExit(f"connection {i} closed early")
            got += chunk
        conns.append(s)
    r = rss_kib(pid)
    print(f"idle={target} rss_kib={r} per_conn_bytes={(r - base) * 1024 / target:.0f}", flush=True)
for s in conns:
    s.close()
