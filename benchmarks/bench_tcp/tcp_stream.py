"""What the link itself allows, for scripts/bench_tcp.sh: one plain TCP
stream, and a 4 KiB ping-pong. (One stream each way at once: two streams
started at the same time from either end, each its own process.)
  tcp_stream.py serve PORT                  (answers any number of tests)
  tcp_stream.py stream HOST PORT SECONDS    GB/s of one stream to HOST
  tcp_stream.py pingpong HOST PORT ITERS    median round trip of 4 KiB, us"""
import socket
import statistics
import sys
import threading
import time

CHUNK = 1 << 20


def recv_exactly(s, n):
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = s.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("closed")
        got += k
    return buf


def sink(s):
    buf = bytearray(CHUNK)
    total = 0
    while True:
        k = s.recv_into(buf)
        if k == 0:
            return total
        total += k


def pump(s, seconds):
    data, total, end = b"\0" * CHUNK, 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        s.sendall(data)
        total += CHUNK
    s.shutdown(socket.SHUT_WR)
    return total


def serve_one(c):
    if recv_exactly(c, 1) == b"s":  # stream: receive until closed
        sink(c)
    else:  # ping-pong
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            try:
                c.sendall(recv_exactly(c, 4096))
            except ConnectionError:
                break
    c.close()


def serve(port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(8)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve_one, args=(c,), daemon=True).start()


def stream(host, port, seconds):
    s = socket.create_connection((host, port))
    s.sendall(b"s")
    t0 = time.perf_counter()
    sent = pump(s, seconds)
    s.recv(1)  # the server closes once it read everything
    print(f"tcp one stream: {sent / (time.perf_counter() - t0) / 1e9:.3f} GB/s")


def pingpong(host, port, iters):
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"p")
    msg, times = b"\1" * 4096, []
    for i in range(iters + 20):
        t0 = time.perf_counter()
        s.sendall(msg)
        recv_exactly(s, 4096)
        if i >= 20:
            times.append(time.perf_counter() - t0)
    print(f"tcp ping-pong 4 KiB: median round trip {statistics.median(times) * 1e6:.1f} us")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "serve":
        serve(int(sys.argv[2]))
    elif cmd == "stream":
        stream(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif cmd == "pingpong":
        pingpong(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
