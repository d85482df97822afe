#!/usr/bin/env bash
# CI for the Python client: the generated stubs match the proto, flake8 (config: .flake8), then
# the test suite.
# Needs: python3-grpcio python3-protobuf python3-scrapy python3-redis protobuf-compiler protobuf-compiler-grpc
# flake8 (Debian; flake8 is installed here when missing and running as root), redis-server (for the
# broker-restart test), and `npm ci` done in the repository root.
set -euo pipefail
cd "$(dirname "$0")"

echo "== python client: generated stubs are up to date"
./generate.sh >/dev/null
if [ -n "$(git status --porcelain -- proxybroker_client/gen)" ]; then
  git status --porcelain -- proxybroker_client/gen
  echo "clients/python/proxybroker_client/gen differs from the proto: run clients/python/generate.sh and commit it" >&2
  exit 1
fi

echo "== python client: flake8"
if ! command -v flake8 >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq flake8 >/dev/null
  else
    echo "flake8 is missing: apt-get install flake8" >&2
    exit 1
  fi
fi
flake8

echo "== python client: tests"
/usr/bin/python3 -m unittest discover -s tests -v
