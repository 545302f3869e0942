#!/usr/bin/env bash
# What tests/browser/test_ui_browser.py needs: Debian's chromium and playwright-core (npm).
# playwright-core never downloads a browser: the test drives /usr/bin/chromium.
# Idempotent: installs only what is missing. Run as root (CI) or with sudo available.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-browser: apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ ! -f scripts/browser/node_modules/playwright-core/package.json ]; then
  echo "install-browser: npm ci (playwright-core, no browser download)"
  (cd scripts/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
echo "install-browser: $(chromium --version 2>/dev/null | head -1); playwright-core $(node -p "require('./scripts/browser/node_modules/playwright-core/package.json').version")"
