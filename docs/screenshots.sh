#!/usr/bin/env bash
# Regenerates the web page's screenshots in docs/screenshots/ (1400x900 and
# 390x844): a scripted session (todos, a grep, a Markdown answer with a table
# and code, an edit_file approval with its diff, the full graph with a node
# open), in headless Chromium through chromedriver.
#
# Needs: chromium and chromedriver (apt-get install -y chromium chromium-driver).
# Run from anywhere: docs/screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test -p lc-agent-server --test browser -- --ignored --exact web_page::screenshots "$@"
ls -l docs/screenshots/
