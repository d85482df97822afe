"""A TCP relay on loopback in front of a real broker, to break the network between client and
broker on purpose (the broker itself is untouched)."""

from __future__ import annotations

import socket
import struct
import threading
from typing import List


class _Way:
    """One direction of one relayed connection: what it forwards to, and what a silence did to it."""

    def __init__(self, dst: socket.socket) -> None:
        self.dst = dst
        self.lock = threading.Lock()  # forwarding and healing keep the bytes in order
        self.kept: List[bytes] = []  # bytes held back by a silence that keeps them
        self.lost = False  # a silence dropped bytes of it

    def forward(self, data: bytes) -> None:
        """Send what was kept, then ``data`` (under ``lock``)."""
        for chunk in self.kept:
            self.dst.sendall(chunk)
        self.kept = []
        if data:
            self.dst.sendall(data)


class _Pair:
    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.sockets = (client, upstream)
        self.up = _Way(upstream)  # what the client sends
        self.down = _Way(client)  # what the broker sends


class TcpRelay:
    """Forwards every connection to ``127.0.0.1:target_port``, with faults on demand:

    - :meth:`hold_replies`: what the broker sends is dropped (requests still reach it: it grants
      and renews, the client hears nothing); :meth:`resume` forwards it again;
    - :meth:`go_silent`: nothing passes in either direction, and every socket stays open (a silent
      partition: no reset, no FIN, the client's TCP connection looks fine); new connections are
      accepted and go silent too. The bytes are dropped, or with ``keep`` held back;
      :meth:`heal` ends the silence: held-back bytes are delivered late, in order (a partition
      that TCP rides out), and a connection that lost bytes is reset (a byte stream with a hole
      in it is nothing TCP delivers: its connection died);
    - :meth:`cut`: every open connection is ended (the client's stream breaks; it reconnects
      through the relay).
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port: int = self._listener.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self._dropping = threading.Event()
        self._silent = threading.Event()
        self._keep = False
        self._lock = threading.Lock()
        self._pairs: List[_Pair] = []
        self._closed = False
        threading.Thread(target=self._accept, name="tcp-relay", daemon=True).start()

    def hold_replies(self) -> None:
        self._dropping.set()

    def resume(self) -> None:
        self._dropping.clear()

    def go_silent(self, keep: bool = False) -> None:
        """Let nothing through either way, sockets open; ``keep``: hold the bytes back for :meth:`heal`."""
        self._keep = keep
        self._silent.set()

    def heal(self) -> None:
        """End the silence: held-back bytes go out; connections that lost bytes are reset."""
        self._silent.clear()  # from now on each direction sends what it kept before anything new
        with self._lock:
            pairs = list(self._pairs)
        for pair in pairs:
            with pair.up.lock, pair.down.lock:
                if pair.up.lost or pair.down.lost:
                    self._drop(pair)
                    continue
                try:
                    pair.up.forward(b"")
                    pair.down.forward(b"")
                except OSError:
                    self._drop(pair)

    def cut(self) -> None:
        """End every open connection at once, on both sides."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for s in pair.sockets:
                _reset(s)

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        self.cut()

    def _drop(self, pair: _Pair) -> None:
        with self._lock:
            if pair in self._pairs:
                self._pairs.remove(pair)
        for s in pair.sockets:
            _reset(s)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                _reset(client)
                continue
            pair = _Pair(client, upstream)
            with self._lock:
                self._pairs.append(pair)
            threading.Thread(target=self._pump, args=(client, pair.up, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, pair.down, True), daemon=True).start()

    def _pump(self, src: socket.socket, way: _Way, replies: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with way.lock:
                    if self._silent.is_set():
                        if self._keep:
                            way.kept.append(data)
                        else:
                            way.lost = True
                        continue
                    if replies and self._dropping.is_set():
                        continue
                    way.forward(data)
        except OSError:
            pass
        finally:
            _reset(src)
            _reset(way.dst)


def _reset(s: socket.socket) -> None:
    """End a connection now: shutdown wakes the thread blocked in recv on it; no lingering."""
    for step in (
        lambda: s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)),
        lambda: s.shutdown(socket.SHUT_RDWR),
        s.close,
    ):
        try:
            step()
        except OSError:
            pass
