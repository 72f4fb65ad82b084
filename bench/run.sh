#!/usr/bin/env bash
# Runs every benchmark of the bench module COUNT times (6 by default:
# enough for benchstat), keeps the raw output in results.txt and prints
# the Markdown table of medians.
#
# The test binary is built once, so every run measures the same Parley
# even if ../ changes meanwhile, and the runs are interleaved (COUNT passes
# of -count 1 rather than one pass of -count COUNT), so a burst of load on
# a shared machine lands on one sample of every library rather than on all
# samples of one.
#
# BENCH=<regexp> ./run.sh runs only the benchmarks it matches (all by
# default), e.g. BENCH='^Benchmark(PingPong|Guard|RequestConversation|Rejected|LiveInitiators|ContractNet)$'
# for the engine's scenarios without the manager, durability, NATS and
# validation runs.
#
# AT=<commit> ./run.sh measures that commit as committed (Parley and this
# module, exported with git archive) rather than the working tree, so that
# work in progress elsewhere in the tree neither skews nor breaks a run.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "${AT:-}" ]; then
  rev=$(git rev-parse --short "$AT^{commit}")
  mkdir "$tmp/src"
  git -C .. archive "$rev" | tar -x -C "$tmp/src"
  (cd "$tmp/src/bench" && go test -c -o "$tmp/bench.test" .)
else
  go test -c -o "$tmp/bench.test" .
  # Which Parley was measured, as a benchmark-format configuration line.
  rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  if ! git diff --quiet HEAD -- .. ':(exclude).' 2>/dev/null; then
    rev="$rev+uncommitted"
  fi
fi
echo "parley: $rev" > results.txt
for _ in $(seq "${COUNT:-6}"); do
  "$tmp/bench.test" -test.run XXX -test.bench "${BENCH:-.}" -test.benchmem -test.count 1 -test.timeout 30m >> results.txt
done
go run ./cmd/benchtable results.txt
