#!/usr/bin/env bash
# What the sandbox costs a command (issue 47, item 8), on the release build:
#
#   1. one-shot: `lc-agent tool execute '{"command":"true"}'` in a fresh
#      process, unconfined (`--sandbox full`) vs Landlock vs bubblewrap
#      (hyperfine, warm-up 5, at least 30 runs each);
#   2. per command inside one long process: the `execute_once` example runs
#      `true` 100 more times with the sandbox already open and prints the
#      mean per command (3 rounds each).
#
# Targets: one-shot at most 10 ms over unconfined; per command at most 3 ms over.
# Needs: hyperfine (`apt-get install -y hyperfine`), bubblewrap, Landlock ABI 6.
# Run from the repository: `benches/sandbox-overhead.sh` (builds what it runs;
# set NO_BUILD=1 to use what target/release holds). Timing belongs here, never
# in a test.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
if [[ -z "${NO_BUILD:-}" ]]; then
  cargo build --release -p lc-agent-cli --bin lc-agent
  cargo build --release -p lc-agent-filesystem --example execute_once
fi
bin="$target/release/lc-agent"
once="$target/release/examples/execute_once"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/.git"
echo "== $(uname -r), $(nproc) cores, $(bwrap --version), user $(id -un)"
echo "== one-shot: lc-agent tool execute true"
# hyperfine -N splits words itself: the JSON is one quoted word.
args="'{\"command\":\"true\"}'"
hyperfine -N --warmup ${WARMUP:-5} --min-runs ${RUNS:-30} --export-markdown "$work/one-shot.md" \
  -n unconfined "$bin tool execute $args --root $work --shell --sandbox full" \
  -n landlock "env LC_AGENT_SANDBOX_MECHANISM=landlock $bin tool execute $args --root $work --shell" \
  -n bubblewrap "env LC_AGENT_SANDBOX_MECHANISM=bubblewrap $bin tool execute $args --root $work --shell" \
  -n bubblewrap-allow-list "env LC_AGENT_SANDBOX_MECHANISM=bubblewrap $bin tool execute $args --root $work --shell --sandbox-allow-domain crates.io" \
  2>/dev/null
cat "$work/one-shot.md"
echo "== per command inside one process (100 commands, 3 rounds)"
cd "$work"
for mechanism in full landlock bubblewrap; do
  mode=workspace-write
  [[ $mechanism == full ]] && mode=full
  for _ in 1 2 3; do
    LC_AGENT_SANDBOX_MECHANISM=${mechanism/full/auto} "$once" "$mode" true 100 2>&1 >/dev/null |
      sed "s/^/$mechanism: /"
  done
done
