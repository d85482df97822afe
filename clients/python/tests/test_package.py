"""The client as a package: ``pip install ./clients/python`` in a fresh virtual environment (with
Debian's grpcio, protobuf and Scrapy from the system site packages, as the README says), then the
installed copy — not this checkout — leases a proxy from a real broker and loads the middleware."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from broker_process import BrokerProcess

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)

SCRIPT = """
import json, os, sys
import proxybroker_client
from importlib.resources import files
from proxybroker_client import BrokerClient
from proxybroker_client.scrapy_middleware import ProxyBrokerMiddleware
c = BrokerClient(os.environ["BROKER"], worker_id="venv-worker")
lease = c.acquire("https://shop.example.com/")
lease.release("SUCCESS")
c.close()
typed = files("proxybroker_client").joinpath("py.typed").is_file()
print(json.dumps({"file": proxybroker_client.__file__, "typed": typed,
                  "proxy": lease.proxy.url, "middleware": ProxyBrokerMiddleware.__name__}))
"""


class PackageTest(unittest.TestCase):
    def test_pip_install_in_a_venv_and_use_it(self) -> None:
        with tempfile.TemporaryDirectory(prefix="pb-py-venv-") as d:
            venv = os.path.join(d, "venv")
            subprocess.run(
                [sys.executable, "-m", "venv", "--system-site-packages", venv], check=True, capture_output=True
            )
            # built from a copy: an in-tree build would leave build/ and *.egg-info in the checkout
            source = os.path.join(d, "source")
            ignore = shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info")
            shutil.copytree(PACKAGE, source, ignore=ignore)
            pip = os.path.join(venv, "bin", "pip")
            subprocess.run(
                [pip, "install", "--no-build-isolation", "--no-deps", "--no-index", source],
                check=True, capture_output=True, cwd=d,
            )
            broker = BrokerProcess().start()
            try:
                out = subprocess.run(
                    [os.path.join(venv, "bin", "python"), "-c", SCRIPT],
                    check=True, capture_output=True, text=True, cwd=d,
                    env={**os.environ, "BROKER": broker.address, "PYTHONPATH": ""},
                )
            finally:
                broker.stop()
            got = json.loads(out.stdout.strip().splitlines()[-1])
            self.assertTrue(got["file"].startswith(venv), got["file"])
            self.assertTrue(got["typed"])
            self.assertEqual(got["middleware"], "ProxyBrokerMiddleware")
            self.assertRegex(got["proxy"], r"^(http|socks5)://([^@/]+@)?127\.0\.0\.1:\d+$")


if __name__ == "__main__":
    unittest.main()
