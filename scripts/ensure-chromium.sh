#!/usr/bin/env bash
# Make sure Debian's headless Chromium and its chromedriver are installed: the UI's browser
# tests (tests/ui) drive them with Selenium. Playwright's own browser download is not used.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "Chromium is missing; install Debian's 'chromium' and 'chromium-driver' packages" >&2
  exit 0
fi
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
