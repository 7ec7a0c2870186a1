#!/usr/bin/env bash
# Builds dslab-faas-bench against a dslab checkout and runs it on a job
# that `faasched bench cluster --export JOB_DIR` wrote.
#
#   scripts/dslab-faas-bench/run.sh DSLAB_CHECKOUT JOB_DIR [--runs N] [--keepalive-s S] [--scheduler least-loaded|basic]
#
# The build goes to $CARGO_TARGET_DIR when set, else to target/ beside this
# script.
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 DSLAB_CHECKOUT JOB_DIR [bench options]" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -f "$1/crates/dslab-faas/Cargo.toml" ]; then
    echo "$0: $1 is not a dslab checkout (no crates/dslab-faas/Cargo.toml)" >&2
    exit 2
fi
dslab=$(cd "$1" && pwd)
shift
# Cargo.toml names dslab-faas by this link's path.
ln -sfn "$dslab" "$here/dslab"
cargo build --release --manifest-path "$here/Cargo.toml"
exec "${CARGO_TARGET_DIR:-$here/target}/release/dslab-faas-bench" "$@"
