#!/usr/bin/env bash
# Installs Debian's chromium package, the headless browser of the web UI's
# browser tests (cli/ui_browser_e2e_test.go, driven by chromedp), when
# /usr/bin/chromium is missing. Idempotent; needs root (or sudo) and apt-get.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
	echo "chromium is installed ($(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium))"
	exit 0
fi
command -v apt-get >/dev/null || { echo "/usr/bin/chromium is missing and there is no apt-get: install Debian's chromium package (the UI browser tests run /usr/bin/chromium)" >&2; exit 1; }
sudo=
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "chromium is missing: install Debian's chromium package as root (apt-get install chromium)" >&2; exit 1; }
	sudo=sudo
fi
echo "Installing Debian's chromium package (headless browser of the UI browser tests)"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq chromium
/usr/bin/chromium --version
