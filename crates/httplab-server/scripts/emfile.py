#!/usr/bin/env python3
"""Descriptor exhaustion check: run the server with `ulimit -n 10000`, open
12000 connections (one request each), and show that the server answers
what fits, uses no CPU while out of descriptors (no busy accept loop), and
answers the rest once descriptors are freed.

usage: emfile.py PORT SERVER_PID   (bounded: 12000 connections, 27 s of waits)
"""
import socket, sys, time, selectors
port, pid = int(sys.argv[1]), int(sys.argv[2])
def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(") ",1)[1].split()
    return int(f[11]) + int(f[12])
req = b"GET /f87.txt HTTP/1.1\r\nHost: x\r\n\r\n"
conns = []
for i in range(12000):
    s = socket.socket(); s.settimeout(5)
    s.bind((f"127.0.0.{2 + i % 40}", 0)); s.connect(("127.0.0.1", port)); s.sendall(req)
    s.setblocking(False)
    conns.append(s)
print("opened", len(conns), flush=True)
def collect(socks, secs):
    sel = selectors.DefaultSelector()
    for s in socks: sel.register(s, selectors.EVENT_READ)
    done = set(); end = time.time() + secs
    while time.time() < end and len(done) < len(socks):
        for k, _ in sel.select(timeout=max(0, end - time.time())):
            try:
                if k.fileobj.recv(200): done.add(k.fileobj)
            except BlockingIOError: pass
            sel.unregister(k.fileobj)
    sel.close()
    return done
ans = collect(conns, 5)
print("answered", len(ans), "of", len(conns), flush=True)
c0 = cpu(); time.sleep(2); c1 = cpu()
print("server cpu ticks (1/100 s) during 2 s at the fd limit:", c1 - c0, flush=True)
waiting = [s for s in conns if s not in ans]
for s in ans: s.close()
ans2 = collect(waiting, 20)
print("after freeing descriptors: answered", len(ans2), "of", len(waiting), flush=True)
