#!/usr/bin/env bash
# What the sandbox costs a command (issue 47, item 8), on the release build:
#
#   1. one-shot: `lc-agent tool execute '{"command":"true"}'` in a fresh
#      process, unconfined (`--sandbox full`) vs Landlock vs bubblewrap
#      (hyperfine, warm-up 5, at least 30 runs each);
#   2. per command inside one long process: the `execute_once` example runs
#      `true` 100 more times with the sandbox already open and prints the
#      mean per command (5 rounds, the variants alternating within each
#      round): unconfined, Landlock, bubblewrap with a `bwrap` per command
#      (`LC_AGENT_SANDBOX_KEEP=0`: before kept sandboxes) and bubblewrap
#      kept across commands (`LC_AGENT_SANDBOX_KEEP=1`: kept from the
#      first, untimed, command; lc-agent keeps it from the second);
#   3. the floors: what the kernel and bubblewrap cost with nothing of
#      lc-agent around them (`sh -c true`; a bare `bwrap` with the same
#      namespaces, with `/proc` and `/dev`, and with every mount lc-agent
#      makes; `unshare` of the same namespaces).
#
# The one-shot runs remember the mechanisms' self-checks across processes
# (`$LC_AGENT_HOME/cache`, a temporary home here): the warm-up runs fill
# it, as a user's first command does. `RECHECK=1` checks in every process.
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
mkdir -p "$work/.git" "$work/home"
export LC_AGENT_HOME="$work/home"
[[ -n "${RECHECK:-}" ]] && export LC_AGENT_SANDBOX_RECHECK=1
echo "== load: $(uptime)"
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
echo "== per command inside one process (100 commands, ${ROUNDS:-5} rounds, alternating)"
cd "$work"
for _ in $(seq "${ROUNDS:-5}"); do
  for variant in full landlock bubblewrap-per-command bubblewrap-kept; do
    mode=workspace-write mechanism=${variant%%-*} keep=1
    [[ $variant == full ]] && mode=full mechanism=auto
    [[ $variant == bubblewrap-per-command ]] && keep=0
    LC_AGENT_SANDBOX_MECHANISM=$mechanism LC_AGENT_SANDBOX_KEEP=$keep "$once" "$mode" true 100 \
      2>&1 >/dev/null | sed "s/^/$variant: /"
  done
done
echo "== floors (no lc-agent)"
ro=(--ro-bind /usr /usr --ro-bind /etc /etc --symlink usr/bin /bin --symlink usr/lib /lib
    --symlink usr/lib64 /lib64)
hyperfine -N --warmup ${WARMUP:-5} --min-runs ${RUNS:-30} --export-markdown "$work/floors.md" \
  -n 'sh -c true' "sh -c true" \
  -n 'unshare -Upfnimu --map-root-user' "unshare -Upfnimu --map-root-user --fork true" \
  -n 'bwrap, binds only' "bwrap ${ro[*]} sh -c true" \
  -n 'bwrap --unshare-all' "bwrap ${ro[*]} --unshare-all --unshare-user sh -c true" \
  -n 'bwrap --unshare-all --proc --dev --tmpfs' \
     "bwrap ${ro[*]} --unshare-all --unshare-user --proc /proc --dev /dev --tmpfs /tmp sh -c true" \
  -n 'bwrap, as lc-agent calls it (no seccomp)' \
     "bwrap ${ro[*]} --ro-bind /opt /opt --ro-bind /dev/null /etc/shadow --ro-bind /dev/null /etc/gshadow --proc /proc --dev /dev --tmpfs /dev/shm --tmpfs /tmp --bind $work $work --ro-bind $work/.git $work/.git --remount-ro /dev --remount-ro / --unshare-all --unshare-user --cap-drop ALL --die-with-parent --new-session --clearenv --disable-userns --chdir $work sh -c true" \
  2>/dev/null
cat "$work/floors.md"
