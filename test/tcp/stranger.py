#!/usr/bin/env python3
"""A stranger at a Chorus job's TCP port, for test/tcp/tcp_strangers.sh.

It speaks the handshake of core/src/net/tcp_handshake.h (written again
here from its description, standard library only) and says what the job did
with it, one line per stranger: "refused", "closed after S s", or "ACCEPTED"
(a hole). Modes:

  claim PORT RANK SIZE JOB SECRET   prove RANK with SECRET ("" = no secret)
  garbage PORT                      send bytes that are no handshake
  silent PORT COUNT                 COUNT connections that never speak
  slowloris PORT                    a valid hello, one byte a second
  proxy PORT TARGET RECORD          relay PORT <-> TARGET; record the first
                                    connection's hello and proof in RECORD
  replay PORT RECORD                the recorded hello and proof, replayed
"""
import hashlib
import hmac
import os
import socket
import struct
import sys
import threading
import time

MAGIC = b"CHRSHS01"
LABEL = b"chorus tcp handshake v1"
NO_SECRET = b"chorus: this job has no secret"
REFUSED, CHALLENGE, ACCEPTED = 0, 1, 2
RENDEZVOUS = 1


def claim_bytes(size, rank, job):
    job = job.encode()
    return struct.pack("<IiiiQH", RENDEZVOUS, size, rank, 0, 0, len(job)) + job


def connect(port):
    # The job's host: STRANGER_HOST (another network namespace's address in
    # tcp_strangers.sh --hosts), else this one.
    host = os.environ.get("STRANGER_HOST", "127.0.0.1")
    return socket.create_connection((host, port), timeout=10)


def recv_exactly(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def wait_closed(s, limit):
    """Seconds until the job closed `s` (None: still open after `limit`)."""
    start = time.monotonic()
    s.settimeout(limit)
    try:
        while s.recv(4096):
            pass
    except socket.timeout:
        return None
    except OSError:
        pass
    return time.monotonic() - start


def claim(port, rank, size, job, secret):
    key = secret.encode() if secret else NO_SECRET
    s = connect(port)
    nc = os.urandom(32)
    claimed = claim_bytes(int(size), int(rank), job)
    s.sendall(MAGIC + nc + claimed)
    try:
        if recv_exactly(s, 1)[0] != CHALLENGE:
            return "refused"
        ns = recv_exactly(s, 32)
        s.sendall(hmac.new(key, LABEL + b"C" + nc + ns + claimed, hashlib.sha256).digest())
        return "ACCEPTED" if recv_exactly(s, 1)[0] == ACCEPTED else "refused"
    except (ConnectionError, OSError):
        return "refused"


def garbage(port):
    s = connect(port)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + os.urandom(64))
    took = wait_closed(s, 15)
    return "closed after %.1f s" % took if took is not None else "still open"


def silent(port, count):
    sockets = [connect(port) for _ in range(int(count))]
    start = time.monotonic()
    open_ones = list(sockets)
    while open_ones and time.monotonic() - start < 15:
        still = []
        for s in open_ones:
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    continue
            except BlockingIOError:
                still.append(s)
                continue
            except OSError:
                continue
            still.append(s)
        open_ones = still
        time.sleep(0.1)
    took = time.monotonic() - start
    return "%d of %s closed within %.1f s" % (len(sockets) - len(open_ones), count, took)


def slowloris(port):
    s = connect(port)
    hello = MAGIC + os.urandom(32) + claim_bytes(2, 1, "x")
    start = time.monotonic()
    for b in hello:
        try:
            s.sendall(bytes([b]))
        except OSError:
            return "closed after %.1f s" % (time.monotonic() - start)
        s.settimeout(1.0)
        try:
            if s.recv(1) == b"":
                return "closed after %.1f s" % (time.monotonic() - start)
        except socket.timeout:
            pass
        except OSError:
            return "closed after %.1f s" % (time.monotonic() - start)
    return "still open after %.1f s" % (time.monotonic() - start)


def relay(src, dst, record=None):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if record is not None:
                record.append(data)
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def proxy(port, target, record_path):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", int(port)))  # reached at its host's address (--hosts: another namespace's)
    listener.listen()
    client, _ = listener.accept()
    server = connect(int(target))
    server.settimeout(None)
    sent = []
    # The connector's first two writes are its hello and its proof; each is
    # sent only after the acceptor answered, so they arrive apart.
    hello = client.recv(4096)
    sent.append(hello)
    server.sendall(hello)
    challenge = recv_exactly(server, 33)
    client.sendall(challenge)
    proof = recv_exactly(client, 32)
    server.sendall(proof)
    with open(record_path + ".tmp", "wb") as f:
        f.write(struct.pack("<I", len(hello)) + hello + proof)
    os.rename(record_path + ".tmp", record_path)
    threading.Thread(target=relay, args=(server, client), daemon=True).start()
    relay(client, server)
    return "relayed"


def replay(port, record_path):
    with open(record_path, "rb") as f:
        data = f.read()
    n = struct.unpack("<I", data[:4])[0]
    hello, proof = data[4:4 + n], data[4 + n:]
    s = connect(port)
    s.sendall(hello)
    try:
        if recv_exactly(s, 1)[0] != CHALLENGE:
            return "refused"
        recv_exactly(s, 32)  # a new challenge: the recorded proof answers another
        s.sendall(proof)
        return "ACCEPTED" if recv_exactly(s, 1)[0] == ACCEPTED else "refused"
    except (ConnectionError, OSError):
        return "refused"


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    port = int(args[0])
    result = {
        "claim": lambda: claim(port, *args[1:]),
        "garbage": lambda: garbage(port),
        "silent": lambda: silent(port, args[1]),
        "slowloris": lambda: slowloris(port),
        "proxy": lambda: proxy(port, *args[1:]),
        "replay": lambda: replay(port, args[1]),
    }[mode]()
    print("stranger %s: %s" % (mode, result), flush=True)


if __name__ == "__main__":
    main()
