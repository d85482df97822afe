"""A TCP relay on loopback in front of a real broker, to break the network between client and
broker on purpose (the broker itself is untouched)."""

from __future__ import annotations

import socket
import struct
import threading
from typing import List, Tuple


class TcpRelay:
    """Forwards every connection to ``127.0.0.1:target_port``, with faults on demand:

    - :meth:`hold_replies`: what the broker sends is dropped (requests still reach it: it grants
      and renews, the client hears nothing); :meth:`resume` forwards it again;
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
        self._lock = threading.Lock()
        self._pairs: List[Tuple[socket.socket, socket.socket]] = []
        self._closed = False
        threading.Thread(target=self._accept, name="tcp-relay", daemon=True).start()

    def hold_replies(self) -> None:
        self._dropping.set()

    def resume(self) -> None:
        self._dropping.clear()

    def cut(self) -> None:
        """End every open connection at once, on both sides."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for s in pair:
                _reset(s)

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        self.cut()

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
            with self._lock:
                self._pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, replies: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if replies and self._dropping.is_set():
                    continue
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _reset(src)
            _reset(dst)


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
