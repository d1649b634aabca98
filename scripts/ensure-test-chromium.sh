#!/usr/bin/env bash
# Makes sure Debian's chromium is installed for the dashboard's browser tests (test/e2e/dashboard-browser.test.ts,
# driven by playwright-core), and prints the browser's path on stdout (nothing else goes to stdout; progress
# goes to stderr). Idempotent: once installed it only checks.
#
# Needs root (or passwordless sudo) the first time, to apt-get install the package, so that the tests work on a
# fresh Debian machine (CI included) without manual steps.
#
#   ENGRAM_TEST_CHROMIUM  a browser binary to use instead (nothing is installed)
set -euo pipefail

log() { echo "ensure-test-chromium: $*" >&2; }
die() { log "$*"; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"
  else die "need root (or passwordless sudo) to run: $* ; or set ENGRAM_TEST_CHROMIUM to a Chromium binary"
  fi
}

if [ -n "${ENGRAM_TEST_CHROMIUM:-}" ]; then
  [ -x "$ENGRAM_TEST_CHROMIUM" ] || die "ENGRAM_TEST_CHROMIUM=$ENGRAM_TEST_CHROMIUM is not an executable"
  echo "$ENGRAM_TEST_CHROMIUM"
  exit 0
fi

find_browser() {
  for candidate in /usr/bin/chromium /usr/bin/chromium-browser; do
    if [ -x "$candidate" ]; then echo "$candidate"; return 0; fi
  done
  return 1
}

if ! browser="$(find_browser)"; then
  log "chromium is not installed; installing it with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  # Another process (a parallel test run) may hold the dpkg lock: wait for it rather than fail.
  as_root apt-get -o DPkg::Lock::Timeout=600 update -q >&2
  as_root apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends chromium fonts-dejavu-core >&2
  browser="$(find_browser)" || die "apt-get installed chromium but no /usr/bin/chromium was found"
fi

"$browser" --version >&2 || die "$browser does not run"
echo "$browser"
