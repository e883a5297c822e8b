#!/usr/bin/env bash
# Make sure Debian's PostgreSQL server binaries are installed. The tests start their own
# throwaway server on a private port and data directory (tests/store/pg_server.py).
set -euo pipefail
if ls -d /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "PostgreSQL server binaries are missing; install Debian's 'postgresql' package" >&2
  exit 0
fi
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
