#!/usr/bin/env python3
"""A tiny static-file HTTP/1.1 server for the tests of `httplab study --mine`.

It stands for "a web server a user wrote": a separate program that takes its
port and document root on the command line, as httplab's `{port}` and
`{root}` placeholders fill them in. It is not httplab and shares no code
with it. Python's http.server, one thread per connection, keep-alive.

Usage: tiny_server.py PORT ROOT [--never-listen]

--never-listen writes a line to stderr and waits without ever listening:
the server that does not start, whose stderr httplab must show.
"""

import http.server
import sys
import time


class Handler(http.server.SimpleHTTPRequestHandler):
    # Keep-alive (HTTP/1.1 with Content-Length) and no Nagle delay between
    # the head and the body.
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format, *args):
        # No access log: it would cost more than serving.
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True


def main(argv):
    if len(argv) < 3:
        print("usage: tiny_server.py PORT ROOT [--never-listen]", file=sys.stderr)
        return 2
    port, root = int(argv[1]), argv[2]
    if "--never-listen" in argv[3:]:
        print(f"tiny_server: stuck before listening on port {port}", file=sys.stderr, flush=True)
        # Bounded: httplab stops it long before this ends.
        time.sleep(120)
        return 1

    def handler(*args, **kwargs):
        return Handler(*args, directory=root, **kwargs)

    with Server(("127.0.0.1", port), handler) as srv:
        print(f"tiny_server: serving {root} on 127.0.0.1:{port}", file=sys.stderr, flush=True)
        srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
