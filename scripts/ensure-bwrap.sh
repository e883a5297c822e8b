#!/usr/bin/env bash
# Make sure bubblewrap is installed: shell_command runs its children under it, and the
# tests in tests/security run real commands in real bubblewrap sandboxes.
set -euo pipefail
if command -v bwrap >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "bubblewrap is missing; install Debian's 'bubblewrap' package" >&2
  exit 0
fi
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
