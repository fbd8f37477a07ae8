#!/usr/bin/env bash
# Installs what the browser test of `stele serve` needs (crates/stele-serve/tests/browser/):
# Debian's chromium and its chromedriver, in one apt step. Quick when they are already there.
# Needs root (CI and the developers' machines run as root) or sudo.
set -euo pipefail
if command -v chromium > /dev/null && command -v chromedriver > /dev/null; then
  echo "chromium and chromedriver already installed: $(chromium --version 2> /dev/null | head -n 1)"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends chromium chromium-driver
echo "installed: $(chromium --version 2> /dev/null | head -n 1)"
