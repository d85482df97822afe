"""A real redis-server on a free loopback port for one test (never the shared one on 6379)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from typing import List, Optional

from broker_process import free_port


class RedisProcess:
    """``redis-server`` in a temporary directory. With ``persistent``, every write goes to an
    append-only file first, so :meth:`kill` then :meth:`start` is a restart that loses nothing."""

    def __init__(self, persistent: bool = False) -> None:
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is not on PATH (Debian: apt-get install redis-server)")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.persistent = persistent
        self._dir = tempfile.mkdtemp(prefix="pb-redis-")
        self.proc: Optional[subprocess.Popen] = None
        self.start()

    def _args(self) -> List[str]:
        durability = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]
        return ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *durability,
                "--dir", self._dir]

    def start(self) -> "RedisProcess":
        self.proc = subprocess.Popen(self._args(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        ping = ["redis-cli", "-u", self.url, "ping"]
        while subprocess.run(ping, capture_output=True, text=True).stdout.strip() != "PONG":
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        return self

    def kill(self) -> None:
        """SIGKILL: connections are refused until :meth:`start`."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self._dir, True)
