#!/usr/bin/env bash
# What `npm test` needs from the machine besides node_modules: redis-server, tinyproxy, curl,
# Chromium, and Python 3 with requests and Scrapy (the gateway's client tests). Run before the
# tests (npm's pretest). As root with apt-get it installs what is missing; otherwise it stops at
# once and prints the command to run.
set -euo pipefail

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v tinyproxy >/dev/null 2>&1 || missing+=(tinyproxy)
command -v curl >/dev/null 2>&1 || missing+=(curl)
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || missing+=(chromium)
/usr/bin/python3 -c 'import requests' >/dev/null 2>&1 || missing+=(python3-requests)
/usr/bin/python3 -c 'import scrapy' >/dev/null 2>&1 || missing+=(python3-scrapy)

[ ${#missing[@]} -eq 0 ] && exit 0

install="apt-get update && apt-get install -y ${missing[*]}"
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "npm test needs these system packages: ${missing[*]}" >&2
  echo "install them, as root on Debian or Ubuntu: $install" >&2
  exit 1
fi
echo "== npm test: installing ${missing[*]} (Debian)"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
