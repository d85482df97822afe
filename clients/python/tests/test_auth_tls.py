"""Bearer tokens, TLS and mTLS against the real broker (certificates made with openssl here)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import unittest

from broker_process import BrokerProcess
from proxybroker_client import BrokerClient, BrokerError
from proxybroker_client.errors import BrokerUnavailable

WORKER_TOKEN = "python-worker-token-0001"
ADMIN_TOKEN = "python-admin-token-00002"


def _openssl(*args: str, cwd: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certs(d: str) -> None:
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=py-test-ca", cwd=d,
    )
    exts = (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"), ("client", "extendedKeyUsage=clientAuth\n"))
    for name, ext in exts:
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write(ext)
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-subj", f"/CN={name}",
            "-out", f"{name}.csr", cwd=d,
        )
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-out", f"{name}.pem", "-extfile", f"{name}.ext", cwd=d,
        )


def read(d: str, name: str) -> bytes:
    with open(os.path.join(d, name), "rb") as f:
        return f.read()


class AuthTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = tempfile.mkdtemp(prefix="pb-py-certs-")
        make_certs(cls.dir)
        tokens = os.path.join(cls.dir, "tokens")
        with open(tokens, "w") as f:
            f.write(f"{WORKER_TOKEN} worker py\n{ADMIN_TOKEN} admin\n")
        cls.broker = BrokerProcess(
            AUTH_TOKENS_FILE=tokens,
            TLS_CERT_FILE=os.path.join(cls.dir, "server.pem"),
            TLS_KEY_FILE=os.path.join(cls.dir, "server.key"),
            TLS_CLIENT_CA_FILE=os.path.join(cls.dir, "ca.pem"),
        ).start()
        cls.ca = read(cls.dir, "ca.pem")
        cls.cert = read(cls.dir, "client.pem")
        cls.key = read(cls.dir, "client.key")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.broker.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def client(self, **kw) -> BrokerClient:
        worker_id = f"py-auth-{len(kw)}-{time.monotonic_ns()}"
        c = BrokerClient(self.broker.address, worker_id=worker_id, request_timeout=3.0, **kw)
        self.addCleanup(c.close)
        return c

    def test_token_and_client_certificate_lease_a_proxy(self) -> None:
        c = self.client(token=WORKER_TOKEN, tls_ca=self.ca, tls_cert=self.cert, tls_key=self.key)
        lease = c.acquire("https://auth.example/")
        # any proxy of the sample pool: http ones and a socks5 one
        self.assertRegex(lease.proxy.url, r"^(http|socks5)://([^@/]+@)?127\.0\.0\.1:\d+$")
        lease.release("SUCCESS")

    def test_a_wrong_token_fails_at_once_with_unauthenticated(self) -> None:
        c = self.client(token="not-a-known-token-000", tls_ca=self.ca, tls_cert=self.cert, tls_key=self.key)
        started = time.monotonic()
        with self.assertRaises(BrokerError) as caught:
            c.acquire("https://auth.example/")
        self.assertEqual(caught.exception.reason, "UNAUTHENTICATED")
        self.assertLess(time.monotonic() - started, 2.0)

    def test_a_worker_token_cannot_use_proxy_admin(self) -> None:
        import grpc
        from proxybroker_client.gen.proxybroker.v1 import admin_pb2 as apb

        c = self.client(token=WORKER_TOKEN, tls_ca=self.ca, tls_cert=self.cert, tls_key=self.key)
        with self.assertRaises(grpc.RpcError) as caught:
            c.admin.ListProxies(apb.ListProxiesRequest(pool="default"), timeout=3)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
        admin = self.client(token=ADMIN_TOKEN, tls_ca=self.ca, tls_cert=self.cert, tls_key=self.key)
        self.assertGreater(len(admin.admin.ListProxies(apb.ListProxiesRequest(pool="default"), timeout=3).proxies), 0)

    def test_without_a_client_certificate_or_without_tls_nothing_is_leased(self) -> None:
        for kw in ({"token": WORKER_TOKEN, "tls_ca": self.ca}, {"token": WORKER_TOKEN}):
            c = self.client(**kw)
            with self.assertRaises(BrokerUnavailable):
                c.acquire("https://auth.example/", timeout=2.0)

    def test_options_are_checked(self) -> None:
        with self.assertRaises(ValueError):
            BrokerClient(self.broker.address, token="has space")
        with self.assertRaises(ValueError):
            BrokerClient(self.broker.address, tls_ca=self.ca, tls_cert=self.cert)


if __name__ == "__main__":
    unittest.main()
