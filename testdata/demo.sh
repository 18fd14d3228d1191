#!/usr/bin/env bash
# make demo, part 1: start RabbitMQ nodes and the Proton C broker, run a
# router with the routes of testdata/demo.yaml (a queue route and an
# exchange route between the RabbitMQ nodes, a queue route to Proton),
# publish at rabbit1, count what arrives at rabbit2 and proton1, show
# `route list`, `link list` and `route map`, add and delete a route at
# runtime, stop the router.
# Part 2 (a mesh): four routers join four RabbitMQ nodes in a square; a
# route from rabbit1 to rabbit4 crosses two hops; the link on its path is
# cut (a fault proxy) and traffic takes the other side of the square;
# then an exchange federated over the square (exchange routes both ways on
# every side) gets 500 messages across to every broker once while the same
# side is cut and healed.
# Part 3 (global destinations): a queue created at rabbit1 is created by a
# router at rabbit2..4; messages published at rabbit1 follow the only
# consumer, at rabbit4.
#
# Every wait polls with a deadline; a count not reached in time fails the
# demo with a message and the router's log. Re-runnable: the queues are
# emptied first, so every run shows the same counts. Brokers stay running.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${FEDROUTER_BIN:-bin/fedrouter}
API=http://127.0.0.1:9696                  # admin.listen of demo.yaml
R1=amqp://guest:guest@127.0.0.1:5701       # rabbit1: AMQP and management
M1=http://guest:guest@127.0.0.1:15701
R2=amqp://guest:guest@127.0.0.1:5702       # rabbit2
M2=http://guest:guest@127.0.0.1:15702
P1=amqp://127.0.0.1:5801                   # proton1 (Proton C broker)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fedrouter-demo.XXXXXX")   # mode 0700
# The router keeps its state and generated token beside its config: a
# copy in the private $WORK, never a directory others may write to.
cp testdata/demo.yaml "$WORK/demo.yaml"
CONF=$WORK/demo.yaml
LOG=$WORK/router.log
DC=$WORK/democlient
START=$(date +%s)
ROUTER=

step() { printf '\n=== %s\n' "$*"; }
fail() {
  echo "demo: FAILED: $*" >&2
  if [ -s "$LOG" ]; then echo "--- last lines of the router log ($LOG):" >&2; tail -20 "$LOG" >&2; fi
  exit 1
}
# fr VERB SUBVERB ARGS...: the CLI against the demo router. Options go
# before the arguments, so --router goes right after the verbs. --config
# is the router's file: the CLI reads from it where the router keeps the
# admin token it generated at its first start.
fr() { local a=$1 b=$2; shift 2; "$BIN" "$a" "$b" --router "$API" --config "$CONF" "$@"; }
stop_router() {
  if [ -n "$ROUTER" ] && kill -0 "$ROUTER" 2>/dev/null; then
    kill -TERM "$ROUTER"; wait "$ROUTER" || true
  fi
  ROUTER=
}
MESH=()      # pids of the mesh routers and the proxy
stop_mesh() {
  local p
  for p in "${MESH[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${MESH[@]}"; do wait "$p" 2>/dev/null || true; done
  MESH=()
}
trap 'stop_router; stop_mesh' EXIT

# wait_routes N SECONDS: until `route list` shows N routes, all Operational.
wait_routes() {
  local deadline=$(( $(date +%s) + $2 ))
  until fr route list 2>/dev/null | awk -v want="$1" \
      'NR > 1 { n++; if ($0 ~ / Operational /) ok++ } END { exit !(n == want && ok == want) }'; do
    kill -0 "$ROUTER" 2>/dev/null || { ROUTER=; fail "the router exited"; }
    if [ "$(date +%s)" -ge "$deadline" ]; then
      fr route list || true
      fail "$1 Operational routes not seen within $2 s"
    fi
    sleep 0.2
  done
}

# expect_bg WHAT ARGS...: `democlient expect ARGS` in the background;
# wait_expects prints each one's report in order and fails on any failure.
EXPECTS=()
expect_bg() {
  local n=${#EXPECTS[@]}
  "$DC" expect "${@:2}" >"$WORK/expect.$n" 2>&1 &
  EXPECTS+=("$!:$1")
}
wait_expects() {
  local n=0 e failed=
  for e in "${EXPECTS[@]}"; do
    if ! wait "${e%%:*}"; then failed="$failed; ${e#*:}"; fi
    cat "$WORK/expect.$n"; n=$((n + 1))
  done
  EXPECTS=()
  [ -z "$failed" ] || fail "${failed#; }"
}

step "brokers: bash testdata/brokers.sh start -r 4 -p 1"
bash testdata/brokers.sh start -r 4 -p 1
go build -o "$DC" ./testdata/democlient || fail "cannot build testdata/democlient"

step "broker objects the routes need (RabbitMQ management API; queues emptied)"
# rabbit1, the source: the queues the queue routes consume, the exchange the
# exchange route subscribes to, and a local queue for the events that stay.
for q in demo.orders demo.to-proton demo.backlog demo.events.local; do "$DC" queue "$M1" "$q"; done
"$DC" exchange "$M1" demo.events topic
"$DC" bind "$M1" demo.events demo.events.local us
# rabbit2, the destination: an exchange per route, each bound to a queue we
# read. Unbound, RabbitMQ would accept the forwarded messages and drop them.
"$DC" exchange "$M2" demo.orders fanout
"$DC" queue "$M2" demo.orders.in
"$DC" bind "$M2" demo.orders demo.orders.in ""
"$DC" exchange "$M2" demo.events topic
"$DC" queue "$M2" demo.events.in
"$DC" bind "$M2" demo.events demo.events.in "#"   # catch all: shows that only eu crosses
"$DC" drain "$P1" demo.from-rabbit                 # Proton's queues cannot be purged
echo "rabbit1: queues demo.orders demo.to-proton demo.backlog demo.events.local, topic exchange demo.events (us -> demo.events.local)"
echo "rabbit2: fanout demo.orders -> demo.orders.in, topic demo.events (#) -> demo.events.in"

step "router: $BIN run --config $CONF"
"$BIN" check-config "$CONF"
if fr route list >/dev/null 2>&1; then
  fail "a router already answers on $API (an earlier demo still running?); stop it first"
fi
"$BIN" run --config "$CONF" >"$LOG" 2>&1 &
ROUTER=$!
wait_routes 3 60
fr route list

step "publish at rabbit1, while readers count at the destinations"
# The readers run during the publishing, so "first sent to last received"
# is the time the messages took to cross.
expect_bg "queue route rabbit1 demo.orders -> rabbit2" "$R2" /amq/queue/demo.orders.in 1000 order 60s
expect_bg "exchange route rabbit1 demo.events eu -> rabbit2" "$R2" /amq/queue/demo.events.in 100 event-eu 60s
expect_bg "us events stay at rabbit1" "$R1" /amq/queue/demo.events.local 100 event-us 60s
expect_bg "queue route rabbit1 demo.to-proton -> proton1" "$P1" demo.from-rabbit 100 to-proton 60s
"$DC" publish "$R1" /amq/queue/demo.orders 1000 order
"$DC" publish "$R1" /exchange/demo.events/eu 100 event-eu
"$DC" publish "$R1" /exchange/demo.events/us 100 event-us
"$DC" publish "$R1" /amq/queue/demo.to-proton 100 to-proton

step "what arrived"
wait_expects
echo "=> rabbit2 got the 1000 orders and the 100 eu events (the 100 us events stayed at rabbit1); proton1 got 100"

step "fedrouter route list"
fr route list
step "fedrouter link list"
fr link list
step "fedrouter route map"
fr route map

step "a route added at runtime drains a backlog"
"$DC" publish "$R1" /amq/queue/demo.backlog 200 backlog
echo "\$ fedrouter queue add -v rabbit2 rabbit1 demo.orders demo.backlog"
fr queue add -v rabbit2 rabbit1 demo.orders demo.backlog
wait_routes 4 30
expect_bg "runtime queue route rabbit1 demo.backlog -> rabbit2" "$R2" /amq/queue/demo.orders.in 200 backlog 30s
wait_expects
echo "\$ fedrouter queue add rabbit2 rabbit1 demo.orders demo.backlog   # again"
fr queue add rabbit2 rabbit1 demo.orders demo.backlog || fail "a duplicate add must succeed (with a warning)"
echo "\$ fedrouter queue del -v rabbit2 rabbit1 demo.orders demo.backlog"
fr queue del -v rabbit2 rabbit1 demo.orders demo.backlog
echo "\$ fedrouter queue del rabbit2 rabbit1 demo.orders demo.orders   # from the config file"
if fr queue del rabbit2 rabbit1 demo.orders demo.orders; then fail "a configured route was deleted"; fi
wait_routes 3 10
fr route list

step "stop the router (SIGTERM)"
stop_router
sed -n '/INF stopping/,$p' "$LOG" | grep -v '^ *$' | cut -c1-160

# ---------------------------------------------------------------- part 2
step "a mesh: four routers, four RabbitMQ nodes in a square"
cat <<'PIC'
    rabbit1 --- mA --- rabbit2
       |                  |
       mC                 mB   (mB reaches rabbit4 through a fault proxy)
       |                  |
    rabbit3 --- mD --- rabbit4
PIC
M4=http://guest:guest@127.0.0.1:15704
R4=amqp://guest:guest@127.0.0.1:5704
"$DC" queue "$M1" demo.mesh.orders
"$DC" exchange "$M4" demo.mesh fanout
"$DC" queue "$M4" demo.mesh.in
"$DC" bind "$M4" demo.mesh demo.mesh.in ""
for i in 1 2 3 4; do   # empty what an earlier run may have left in transit
  for b in 1 2 3 4; do
    [ "$i" = "$b" ] || "$DC" queue "http://guest:guest@127.0.0.1:1570$i" "fedrouter.transit.rabbit$b"
  done
  # an exchange federated over the square (exchange routes both ways on
  # every side, below), with a queue at every broker to see what arrives
  "$DC" forget-fanout "http://guest:guest@127.0.0.1:1570$i" demo.fed news.eu
  "$DC" exchange "http://guest:guest@127.0.0.1:1570$i" demo.fed topic
  "$DC" queue "http://guest:guest@127.0.0.1:1570$i" demo.fed.in
  "$DC" bind "http://guest:guest@127.0.0.1:1570$i" demo.fed demo.fed.in "news.#"
done
"$DC" proxy 127.0.0.1:5704 "$WORK/proxy.addr" >"$WORK/proxy.log" 2>&1 &
PROXY=$!
MESH+=("$PROXY")
for _ in $(seq 50); do [ -s "$WORK/proxy.addr" ] && break; sleep 0.1; done
[ -s "$WORK/proxy.addr" ] || fail "the fault proxy did not start"
PROXY_ADDR=$(cat "$WORK/proxy.addr")
# mesh_router ID PORT A A_URL B B_URL [ROUTES...]: write a config, start it.
mesh_router() {
  local id=$1 port=$2 a=$3 aurl=$4 b=$5 burl=$6; shift 6
  local conf=$WORK/$id.yaml
  {
    echo "router_id: $id"
    echo "brokers:"
    echo "  - {name: $a, url: \"$aurl\", profile: rabbitmq, username: guest, password: guest, management: {url: \"http://127.0.0.1:1570${a#rabbit}\"}}"
    echo "  - {name: $b, url: \"$burl\", profile: rabbitmq, username: guest, password: guest, management: {url: \"http://127.0.0.1:1570${b#rabbit}\"}}"
    echo "links:"
    echo "  - {between: [$a, $b]}"
    echo "topology: {secret: demo-mesh-secret-0123456789abcdef, refresh: 1s, max_age: 3s, control_address: fedrouter.demo.control}"
    echo "reconnect: {min: 200ms, max: 2s}"
    echo "admin: {listen: 127.0.0.1:$port}"
    echo "log: {level: info, format: text}"
    if [ $# -gt 0 ]; then echo "routes:"; printf '  - %s\n' "$@"; fi
  } >"$conf"
  "$BIN" check-config "$conf" >/dev/null || fail "$conf"
  "$BIN" run --config "$conf" >"$WORK/$id.log" 2>&1 &
  MESH+=("$!")
}
# fed A B: exchange routes both ways between A and B for demo.fed, key news.eu
fed() { echo "{kind: exchange, src: $1, dest: $2, exchange: demo.fed, key: news.eu}"; echo "{kind: exchange, src: $2, dest: $1, exchange: demo.fed, key: news.eu}"; }
mapfile -t FA < <(fed rabbit1 rabbit2); mapfile -t FB < <(fed rabbit2 rabbit4)
mapfile -t FC < <(fed rabbit1 rabbit3); mapfile -t FD < <(fed rabbit3 rabbit4)
mesh_router mA 9697 rabbit1 amqp://127.0.0.1:5701 rabbit2 amqp://127.0.0.1:5702 \
  "{kind: queue, src: rabbit1, dest: rabbit4, exchange: demo.mesh, queue: demo.mesh.orders}" "${FA[@]}"
mesh_router mB 9698 rabbit2 amqp://127.0.0.1:5702 rabbit4 "amqp://$PROXY_ADDR" "${FB[@]}"
mesh_router mC 9699 rabbit1 amqp://127.0.0.1:5701 rabbit3 amqp://127.0.0.1:5703 "${FC[@]}"
mesh_router mD 9700 rabbit3 amqp://127.0.0.1:5703 rabbit4 amqp://127.0.0.1:5704 "${FD[@]}"
API=http://127.0.0.1:9697   # the CLI talks to mA from here on
CONF=$WORK/mA.yaml
LOG=$WORK/mA.log
# wait_path WANT SECONDS: until mA's `route list` shows the route going WANT.
wait_path() {
  local deadline=$(( $(date +%s) + $2 ))
  until fr route list 2>/dev/null | grep -q "Operational.*$1"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then fr route list || true; fail "the route did not go $1 within $2 s"; fi
    sleep 0.2
  done
}
wait_path "via rabbit1 > rabbit2 > rabbit4" 60
echo "\$ fedrouter route list      # on mA: rabbit4 is not mA's broker; the route is multi-hop"
fr route list
echo "\$ fedrouter topology        # every router holds the same graph; rabbit1's next hops:"
"$BIN" topology --router "$API" --config "$CONF" | awk '/Next Hop/ { p = 1 } p && (/^From/ || /^rabbit1 /)'

step "1000 orders from rabbit1 to rabbit4, two hops"
expect_bg "multi-hop rabbit1 -> rabbit4" "$R4" /amq/queue/demo.mesh.in 1000 mesh 60s
"$DC" publish "$R1" /amq/queue/demo.mesh.orders 1000 mesh
wait_expects

step "cut the link rabbit2 - rabbit4 (mB's connection to rabbit4) while 2000 more orders cross"
expect_bg "rabbit1 -> rabbit4 across the cut" "$R4" /amq/queue/demo.mesh.in 2000 mesh-cut 90s
"$DC" publish "$R1" /amq/queue/demo.mesh.orders 2000 mesh-cut &
PUB=$!
kill -USR1 "$PROXY"
CUT=$(date +%s%N)
echo "cut: mB lost rabbit4; its link-state advertisement says so, every router recomputes"
wait_path "via rabbit1 > rabbit3 > rabbit4" 60
echo "the route goes via rabbit3 $(( ($(date +%s%N) - CUT) / 1000000 )) ms after the cut (as seen by polling route list)"
wait "$PUB" || fail "publishing failed"
wait_expects
echo "=> none lost; the path counts show the switch (messages caught on rabbit2 go back through rabbit1)"
echo "\$ fedrouter route list"
fr route list
echo "\$ fedrouter link list       # on mC: its link now carries the transit for rabbit4"
"$BIN" link list --router http://127.0.0.1:9699 --config "$WORK/mC.yaml"

step "heal the link"
kill -USR2 "$PROXY"
wait_path "via rabbit1 > rabbit2 > rabbit4" 60
echo "traffic is back on rabbit2's side"

step "an exchange federated over the square: 500 news published at rabbit1, the side rabbit2 - rabbit4 cut, then healed"
echo "exchange routes both ways on every side (8 routes, 4 routers): each message is taken once at rabbit1"
echo "and copied to each other broker, straight to a neighbour or through transit (docs/multihop.md)"
for i in 2 3 4; do
  expect_bg "demo.fed at rabbit$i" "amqp://guest:guest@127.0.0.1:570$i" /amq/queue/demo.fed.in 500 fed 90s
done
kill -USR1 "$PROXY"
wait_path "via rabbit1 > rabbit3 > rabbit4" 60
"$DC" publish "$R1" /exchange/demo.fed/news.eu 500 fed
kill -USR2 "$PROXY"
wait_path "via rabbit1 > rabbit2 > rabbit4" 60
wait_expects
echo "=> each broker got each message once; rabbit4's came by rabbit3 while the side was cut, and nothing"
echo "   held on rabbit2's side is sent again after the healing (docs/multihop.md: exchange routes on a mesh)"
echo "\$ fedrouter route list      # on mA: its two exchange routes fan out through rabbit1's and rabbit2's shared queues"
fr route list | grep -E "^ID|demo.fed"
stop_mesh

# ---------------------------------------------------------------- part 3
step "global destinations: one router over rabbit1..4, destinations: demo.gd.*"
for i in 1 2 3 4; do "$DC" delete "http://guest:guest@127.0.0.1:1570$i" demo.gd.orders; done   # an earlier run's
CONF=$WORK/gd.yaml
API=http://127.0.0.1:9701
LOG=$WORK/gd.log
{
  echo "router_id: gd"
  echo "brokers:"
  for i in 1 2 3 4; do
    echo "  - {name: rabbit$i, url: \"amqp://127.0.0.1:570$i\", profile: rabbitmq, username: guest, password: guest, management: {url: \"http://127.0.0.1:1570$i\"}}"
  done
  echo "destinations:"
  echo "  - {name: \"demo.gd.*\", settle: 2s, max_hops: 2}"
  echo "admin: {listen: 127.0.0.1:9701}"
  echo "log: {level: info, format: text}"
} >"$CONF"
cat "$CONF"
"$BIN" check-config "$CONF" >/dev/null || fail "$CONF"
"$BIN" run --config "$CONF" >"$LOG" 2>&1 &
ROUTER=$!
"$DC" queue "$M1" demo.gd.orders
echo "created demo.gd.orders at rabbit1 (the management API, as an administrator would)"
deadline=$(( $(date +%s) + 60 ))
until [ "$(fr destination list 2>/dev/null | grep -c ' present ')" = 4 ]; do
  kill -0 "$ROUTER" 2>/dev/null || { ROUTER=; fail "the router exited"; }
  if [ "$(date +%s)" -ge "$deadline" ]; then fr destination list || true; fail "demo.gd.orders not at rabbit1..4 within 60 s"; fi
  sleep 0.2
done
echo "\$ fedrouter destination list      # the router created it at rabbit2..4, with the same properties"
fr destination list

step "a consumer at rabbit4 only; 1000 orders published at rabbit1 follow it"
expect_bg "rabbit1 -> the consumer at rabbit4" "$R4" /amq/queue/demo.gd.orders 1000 gd 90s
"$DC" publish "$R1" /amq/queue/demo.gd.orders 1000 gd
wait_expects
echo "=> the router moved them from rabbit1's instance to rabbit4's, where the consumer is (docs/destinations.md);"
echo "   each message counts its moves (x-fedrouter-moves), at most max_hops"
# Messages and Consumers are the brokers' statistics (up to 5 s old):
# give rabbit1's a moment to show its queue empty.
deadline=$(( $(date +%s) + 15 ))
until fr destination list 2>/dev/null | grep -q 'rabbit1  present   0 ' || [ "$(date +%s)" -ge "$deadline" ]; do sleep 0.5; done
echo "\$ fedrouter destination list      # Messages, Consumers: the brokers' statistics, up to 5 s old"
fr destination list
stop_router
echo
echo "demo done in $(( $(date +%s) - START )) s. Router log: $LOG"
echo "Brokers still run: 'bash testdata/brokers.sh stop' stops them."
