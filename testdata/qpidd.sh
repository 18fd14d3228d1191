#!/usr/bin/env bash
# qpidd.sh — the qpidd (Apache Qpid C++ broker) test peers, wrapping the
# shared build's script (shared/peers/qpidd/qpidd.sh: its binaries stay
# there). Same commands, plus the fixed set the tests use:
#
#   qpidd.sh dir                 print the shared qpidd folder (exit 3 when absent,
#                                2 when FEDROUTER_QPIDD_DIR is set and wrong)
#   qpidd.sh deps                install its Debian runtime packages
#   qpidd.sh start N | stop N | kill9 N | status
#   qpidd.sh start-test          start the test instances (below), leave running ones alone
#   qpidd.sh stop-test           stop them
#
# Instances and their mode are fixed by number, so a test and `make test`
# agree on what runs where: qpidd1, qpidd2 and qpidd4 are strict (an
# unknown address is amqp:not-found: what a production broker does), qpidd3
# creates queues on demand (qpidd.sh's default --queue-patterns). AMQP on
# 127.0.0.1:5900+N, SASL ANONYMOUS, nothing durable across a broker restart.
#
# The shared folder is found at $FEDROUTER_QPIDD_DIR, else at
# ../shared/peers/qpidd next to the repository's root (where the worktrees
# of this project live), else at ../../shared/peers/qpidd, else at this
# workplace's /work/shared/peers/qpidd (a clone made elsewhere, e.g. CI's;
# FEDROUTER_QPIDD_FALLBACK= turns that last one off, or names another).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TEST_INSTANCES=(1 2 3 4)

locate() {
  local d
  if [ -n "${FEDROUTER_QPIDD_DIR:-}" ]; then  # set: it must be right, no silent fallback
    [ -x "$FEDROUTER_QPIDD_DIR/qpidd.sh" ] && { (cd "$FEDROUTER_QPIDD_DIR" && pwd); return 0; }
    echo "qpidd.sh: FEDROUTER_QPIDD_DIR=$FEDROUTER_QPIDD_DIR holds no executable qpidd.sh" >&2
    exit 2  # a wrong setting is an error, not a missing (skippable) peer
  fi
  for d in "$ROOT/../shared/peers/qpidd" "$ROOT/../../shared/peers/qpidd" "${FEDROUTER_QPIDD_FALLBACK-/work/shared/peers/qpidd}"; do
    [ -n "$d" ] && [ -x "$d/qpidd.sh" ] && { (cd "$d" && pwd); return 0; }
  done
  return 1
}

DIR=$(locate) || {
  rc=$?; [ $rc = 2 ] && exit 2
  echo "qpidd.sh: the shared qpidd build was not found (set FEDROUTER_QPIDD_DIR, or put it at $ROOT/../shared/peers/qpidd)" >&2
  exit 3
}

# strict N: instance N refuses unknown addresses (empty --queue-patterns).
strict() { [ "$1" != 3 ]; }

start() {
  if strict "$1"; then QPIDD_QUEUE_PATTERNS= "$DIR/qpidd.sh" start "$@"
  else env -u QPIDD_QUEUE_PATTERNS "$DIR/qpidd.sh" start "$@"; fi
}

case "${1:-}" in
  dir) echo "$DIR" ;;
  start) shift; [ $# -ge 1 ] || { echo "usage: qpidd.sh start N" >&2; exit 2; }; start "$@" ;;
  start-test) for n in "${TEST_INSTANCES[@]}"; do start "$n"; done ;;
  stop-test) for n in "${TEST_INSTANCES[@]}"; do "$DIR/qpidd.sh" stop "$n"; done ;;
  deps|stop|kill9|status) exec "$DIR/qpidd.sh" "$@" ;;
  *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
