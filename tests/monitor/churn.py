#!/usr/bin/env python3
"""churn.py PORT N SECONDS - holds N idle connections to 127.0.0.1:PORT for
SECONDS, opening a new one for each that the server closes (a client
starving the exporter's connection slots). Prints how many it opened."""
import selectors
import socket
import sys
import time

port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
sel = selectors.DefaultSelector()
opened = 0


def connect():
    global opened
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", port))
    sel.register(s, selectors.EVENT_READ)
    opened += 1


for _ in range(n):
    connect()
end = time.monotonic() + secs
while time.monotonic() < end:
    for key, _ in sel.select(timeout=0.05):
        s = key.fileobj
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:  # closed by the server: reopen at once
            sel.unregister(s)
            s.close()
            connect()
print(opened)
