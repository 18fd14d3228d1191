#!/usr/bin/env bash
# make demo: start the brokers, run a router against them, show each
# connection's state, kill the Proton broker and bring it back, stop.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${FEDROUTER_BIN:-bin/fedrouter}
H=testdata/brokers.sh
OUT=$(mktemp -d)/router.log

step() { printf '\n=== %s\n' "$*"; }
# wait_for PATTERN SECONDS: poll the router's output until PATTERN appears
# after the last mark.
mark=0
wait_for() {
  local deadline=$(( $(date +%s) + $2 ))
  until tail -n +"$mark" "$OUT" | grep -q -- "$1"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "demo: '$1' not seen within $2 s; router output:"; cat "$OUT"; exit 1; fi
    sleep 0.2
  done
}
set_mark() { mark=$(( $(wc -l < "$OUT") + 1 )); }

step "brokers (testdata/brokers.sh start -r 2 -p 1)"
bash $H start -r 2 -p 1

step "router: $BIN run --config testdata/demo/router.yaml"
"$BIN" check-config testdata/demo/router.yaml
"$BIN" run --config testdata/demo/router.yaml --status-every 1s >"$OUT" 2>&1 &
ROUTER=$!
trap 'kill $ROUTER 2>/dev/null || true' EXIT
for b in rabbit1 rabbit2 proton1; do wait_for "broker=$b .*state=Operational" 30; done
set_mark; wait_for "^Broker" 5; sleep 0.1
tail -n +"$mark" "$OUT" | grep -A3 -m1 '^Broker'

step "kill -9 the Proton broker"
set_mark
bash $H kill proton1
wait_for "broker=proton1 .*state=Waiting" 30
tail -n +"$mark" "$OUT" | grep "broker=proton1"

step "restart it: the router reconnects within its backoff (max 8s here)"
set_mark
bash $H restart proton1
wait_for "broker=proton1 .*state=Operational" 30
set_mark; wait_for "^Broker" 5; sleep 0.1
tail -n +"$mark" "$OUT" | grep -A3 -m1 '^Broker'

step "stop the router (SIGTERM)"
kill -TERM $ROUTER; wait $ROUTER || true
trap - EXIT
tail -5 "$OUT"
echo
echo "router log: $OUT  (brokers still running: 'bash testdata/brokers.sh stop' stops them)"
