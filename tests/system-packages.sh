#!/usr/bin/env bash
# The Debian packages the test suites need from the system, each with why:
# says which are missing before anything is installed, then installs them with
# apt-get when we are root (as CI is): no recommended extras and nothing else
# upgraded. Otherwise it says the command to run and fails.
#   usage: tests/system-packages.sh redis-server [chromium]
set -euo pipefail

why() {
  case "$1" in
    redis-server) echo "the Redis store's tests start their own redis-server on loopback" ;;
    chromium) echo "the web table's browser tests (Playwright drives Debian's Chromium; SPADES_SKIP_BROWSER=1 skips that suite)" ;;
    *) echo "needed by the tests" ;;
  esac
}

present() {
  case "$1" in
    redis-server) [ -x "${SPADES_REDIS_SERVER:-}" ] || command -v redis-server >/dev/null 2>&1 ;;
    chromium) [ -x "${SPADES_CHROMIUM:-/usr/bin/chromium}" ] ;;
    *) dpkg -s "$1" >/dev/null 2>&1 ;;
  esac
}

missing=()
for p in "$@"; do
  present "$p" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "The tests need these Debian packages, missing on this machine:"
for p in "${missing[@]}"; do
  echo "  ${p}: $(why "$p")"
done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing them system-wide now: apt-get install --no-install-recommends --no-upgrade ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends --no-upgrade "${missing[@]}" >/dev/null
  for p in "${missing[@]}"; do
    present "$p" || { echo "${p} was installed, but is still not where the tests look for it" >&2; exit 1; }
  done
else
  echo "Install them as root first: apt-get install --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
