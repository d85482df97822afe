"""Start and stop a real ProxyBroker process (the TypeScript broker of this repository) for tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from typing import List, Optional

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrokerProcess:
    """``node --conditions=@proxybroker/source --import tsx src/main.ts`` (what ``npm start`` runs) on a
    loopback port, embedded store, sample pool."""

    def __init__(self, port: Optional[int] = None, **env: str) -> None:
        self.port = port or free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = dict(os.environ)
        self.env.pop("REDIS_URL", None)
        self.env.update({
            "LISTEN_ADDRESS": self.address,
            "LEASE_TTL_MIN_MS": "50",
            "SHUTDOWN_GRACE_MS": "500",
        })
        self.env.update(env)
        self.proc: Optional[subprocess.Popen] = None
        self.stderr: List[str] = []

    def start(self, timeout: float = 30.0) -> "BrokerProcess":
        self.stderr = []
        self.proc = subprocess.Popen(
            ["node", "--conditions=@proxybroker/source", "--import", "tsx", "src/main.ts"],
            cwd=REPO,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        ready = threading.Event()

        def pump(stream) -> None:
            for line in stream:
                self.stderr.append(line)
                if "listening on" in line:
                    ready.set()

        threading.Thread(target=pump, args=(self.proc.stderr,), daemon=True).start()
        deadline = time.monotonic() + timeout
        while not ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("broker did not start:\n" + "".join(self.stderr))
        return self

    def stop(self, sig: int = signal.SIGKILL) -> None:
        """Stop the broker (SIGKILL by default: a crash, nothing drained)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None
