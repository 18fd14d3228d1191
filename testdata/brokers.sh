#!/usr/bin/env bash
# brokers.sh — the project's real-broker harness: install, start, stop and
# report AMQP 1.0 brokers on loopback for tests and the demo.
#
#   brokers.sh install                      install packages, build the Proton C broker
#   brokers.sh start [-r N] [-p N] [-y N]   N RabbitMQ nodes (max 4), Proton C
#                                           brokers, Proton Python brokers
#   brokers.sh stop                         stop everything this harness started
#   brokers.sh status                       what runs, where it listens
#   brokers.sh kill NAME | restart NAME     kill -9 one broker / start it again
#
# Idempotent: install skips what is there, start leaves running brokers alone.
# Each started broker is written to $FEDROUTER_BROKERS_DIR/brokers.env as
#   NAME KIND AMQP_URL MGMT_URL PID
# which the Go helper (amqp/brokertest) reads.
#
# Ports (loopback only), chosen away from the defaults so a system broker
# cannot collide: RabbitMQ node i: AMQP 5700+i, management 15700+i,
# Erlang distribution 25700+i. Proton C broker i: 5800+i. Python: 5810+i.
set -euo pipefail

BASE=${FEDROUTER_BROKERS_DIR:-/tmp/fedrouter-brokers}
RMQ_BIN=/usr/lib/rabbitmq/bin   # the real scripts; /usr/sbin wrappers su to user rabbitmq
PROTON_EX=/usr/share/proton/examples
PKGS=(rabbitmq-server libqpid-proton11-dev libqpid-proton11-dev-examples
      python3-qpid-proton python-qpid-proton-doc gcc pkg-config)
PLUGINS='[rabbitmq_amqp1_0,rabbitmq_management,rabbitmq_shovel,rabbitmq_shovel_management,rabbitmq_event_exchange].'
MAX_RABBIT=4
REGISTRY=$BASE/brokers.env

log() { printf '%s\n' "$*" >&2; }
die() { log "brokers.sh: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

missing_pkgs() {
  local p out=()
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || out+=("$p")
  done
  printf '%s\n' "${out[@]}"
}

cmd_install() {
  local t0 miss; t0=$(now)
  mapfile -t miss < <(missing_pkgs | sed '/^$/d')
  if [ ${#miss[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "packages missing (${miss[*]}) and not root: run as root or install them"
    log "installing: ${miss[*]}"
    # Keep Debian's maintainer scripts from starting a system RabbitMQ on the
    # default ports: policy-rc.d exit 101 forbids service starts.
    local made_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; made_policy=1
    fi
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q --no-install-recommends "${miss[@]}" >"$BASE.apt.log" 2>&1; then
      apt-get update -q >>"$BASE.apt.log" 2>&1 || true
      apt-get install -y -q --no-install-recommends "${miss[@]}" >>"$BASE.apt.log" 2>&1 \
        || { [ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d; tail -20 "$BASE.apt.log"; die "apt-get install failed"; }
    fi
    [ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d
    # A system node may still have been started (e.g. policy-rc.d existed): stop it.
    pkill -u rabbitmq -f beam.smp 2>/dev/null || true
    log "packages installed in $(since "$t0")s"
  fi
  build_proton_c
  log "install done in $(since "$t0")s"
}

# build_proton_c compiles Debian's Proton C example broker once; the binary
# is rebuilt only when the example source changes.
build_proton_c() {
  mkdir -p "$BASE/bin" "$BASE/src"
  local src=$PROTON_EX/c/broker.c sum
  [ -f "$src" ] || die "missing $src: run '$0 install'"
  sum=$(cat "$src" "$PROTON_EX/c/thread.h" | md5sum | cut -d' ' -f1)
  if [ -x "$BASE/bin/proton-c-broker" ] && [ "$(cat "$BASE/bin/proton-c-broker.sum" 2>/dev/null)" = "$sum" ]; then
    return 0
  fi
  cp "$src" "$PROTON_EX/c/thread.h" "$BASE/src/"
  # shellcheck disable=SC2046
  gcc -O2 -o "$BASE/bin/proton-c-broker" "$BASE/src/broker.c" \
    $(pkg-config --cflags --libs libqpid-proton) -lpthread || die "building the Proton C broker failed"
  echo "$sum" > "$BASE/bin/proton-c-broker.sum"
  log "built $BASE/bin/proton-c-broker"
}

rabbit_env() {
  local i=$1 d=$BASE/rabbit$1
  export HOME=$BASE   # the Erlang cookie, shared by all nodes and rabbitmqctl
  export RABBITMQ_NODENAME=fedrabbit$i@localhost
  export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT=$((5700 + i))
  export RABBITMQ_DIST_PORT=$((25700 + i))
  export RABBITMQ_MNESIA_BASE=$d/mnesia
  export RABBITMQ_LOG_BASE=$d/log
  export RABBITMQ_PID_FILE=$d/pid
  export RABBITMQ_CONFIG_FILE=$d/rabbitmq.conf
  export RABBITMQ_ADVANCED_CONFIG_FILE=$d/advanced.config
  export RABBITMQ_ENABLED_PLUGINS_FILE=$d/enabled_plugins
  export RABBITMQ_CONF_ENV_FILE=$d/rabbitmq-env.conf
  export RABBITMQ_PLUGINS_EXPAND_DIR=$d/plugins-expand
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='-kernel inet_dist_use_interface {127,0,0,1}'
  export ERL_EPMD_ADDRESS=127.0.0.1
}

rabbit_up() { rabbit_env "$1"; "$RMQ_BIN/rabbitmqctl" -q -n "$RABBITMQ_NODENAME" ping >/dev/null 2>&1; }

start_rabbit() {
  local i=$1 d=$BASE/rabbit$1 t0
  rabbit_env "$i"
  mkdir -p "$d/log" "$d/mnesia"
  : > "$d/rabbitmq-env.conf"
  echo "$PLUGINS" > "$d/enabled_plugins"
  cat > "$d/rabbitmq.conf" <<CONF
listeners.tcp.default = 127.0.0.1:$RABBITMQ_NODE_PORT
management.tcp.port = $((15700 + i))
management.tcp.ip = 127.0.0.1
loopback_users = none
log.console = false
log.file.level = warning
vm_memory_high_watermark.relative = 0.2
disk_free_limit.absolute = 100MB
CONF
  if ! rabbit_up "$i"; then
    t0=$(now)
    # Redirect the whole subshell: no process of ours may keep the caller's
    # stdout open, or a caller reading our output would wait for the broker.
    (cd "$d" && exec setsid "$RMQ_BIN/rabbitmq-server") >"$d/log/stdout.log" 2>&1 </dev/null &
    "$RMQ_BIN/rabbitmqctl" -q -n "$RABBITMQ_NODENAME" --timeout 120 wait "$RABBITMQ_PID_FILE" >/dev/null 2>&1 \
      || { tail -20 "$d/log/stdout.log" >&2; die "rabbit$i failed to start; logs in $d/log"; }
    "$RMQ_BIN/rabbitmqctl" -q -n "$RABBITMQ_NODENAME" --timeout 120 await_startup >/dev/null
    log "rabbit$i started in $(since "$t0")s"
    echo "$PLUGINS" > "$d/plugins.applied"
  elif [ "$(cat "$d/plugins.applied" 2>/dev/null)" != "$PLUGINS" ]; then
    # A node started by an older version of this script may lack plugins
    # added to PLUGINS since: enable them on the running node.
    "$RMQ_BIN/rabbitmqctl" -q -n "$RABBITMQ_NODENAME" eval \
      "rabbit_plugins:ensure(\"$d/enabled_plugins\")." >/dev/null 2>&1 \
      && echo "$PLUGINS" > "$d/plugins.applied" \
      || log "rabbit$i: could not enable the plugins on the running node; restart it"
  fi
  register "rabbit$i" rabbitmq "amqp://127.0.0.1:$RABBITMQ_NODE_PORT" "http://127.0.0.1:$((15700 + i))" "$(cat "$RABBITMQ_PID_FILE")"
}

# pid_alive PIDFILE: the process runs and is not a zombie (a killed broker
# whose parent is gone can stay a zombie where PID 1 does not reap).
pid_alive() {
  local p
  p=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$p" ] && [ -r "/proc/$p/stat" ] || return 1
  local st; st=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)
  [ -n "$st" ] && [ "$st" != Z ]
}

wait_port() {  # host port seconds
  local deadline=$(( $(date +%s) + $3 ))
  while ! (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

start_simple() {  # name kind port cmd...
  local name=$1 kind=$2 port=$3; shift 3
  local d=$BASE/$name
  mkdir -p "$d"
  if ! pid_alive "$d/pid"; then
    # The broker writes its own pid (exec keeps it) so stop/kill hit the broker itself.
    (cd "$d" && exec setsid bash -c 'echo $$ >"$0"; exec "$@"' "$d/pid" "$@") >"$d/stdout.log" 2>&1 </dev/null &
    for _ in $(seq 50); do [ -s "$d/pid" ] && break; sleep 0.05; done
    wait_port 127.0.0.1 "$port" 20 || { tail -5 "$d/stdout.log" >&2; die "$name did not listen on $port"; }
    log "$name started"
  fi
  register "$name" "$kind" "amqp://127.0.0.1:$port" "" "$(cat "$d/pid")"
}

start_proton_c() { build_proton_c; start_simple "proton$1" proton $((5800 + $1)) "$BASE/bin/proton-c-broker" 127.0.0.1 $((5800 + $1)); }
start_proton_py() {
  start_simple "pyproton$1" proton $((5810 + $1)) /usr/bin/python3 "$PROTON_EX/python/broker.py" -a "127.0.0.1:$((5810 + $1))"
}

register() {  # name kind url mgmt pid
  touch "$REGISTRY"
  { grep -v "^$1 " "$REGISTRY" || true; printf '%s %s %s %s %s\n' "$1" "$2" "$3" "${4:--}" "$5"; } | sort > "$REGISTRY.tmp"
  mv "$REGISTRY.tmp" "$REGISTRY"
}

cmd_start() {
  local nr=2 np=1 ny=0
  while [ $# -gt 0 ]; do
    case "$1" in
      -r|--rabbit) nr=$2; shift 2 ;;
      -p|--proton) np=$2; shift 2 ;;
      -y|--python) ny=$2; shift 2 ;;
      *) die "start: unknown option '$1' (want -r N, -p N, -y N)" ;;
    esac
  done
  [ "$nr" -le $MAX_RABBIT ] || die "start: at most $MAX_RABBIT RabbitMQ nodes (asked for $nr)"
  mkdir -p "$BASE"
  [ -z "$(missing_pkgs | sed '/^$/d')" ] || cmd_install
  local t0 i; t0=$(now)
  for ((i = 1; i <= nr; i++)); do start_rabbit "$i"; done
  for ((i = 1; i <= np; i++)); do start_proton_c "$i"; done
  for ((i = 1; i <= ny; i++)); do start_proton_py "$i"; done
  log "brokers ready in $(since "$t0")s"
  cmd_status
}

stop_one() {
  local name=$1
  case "$name" in
    rabbit*)
      local i=${name#rabbit}
      if rabbit_up "$i"; then
        "$RMQ_BIN/rabbitmqctl" -q -n "$RABBITMQ_NODENAME" stop "$RABBITMQ_PID_FILE" >/dev/null 2>&1 \
          || kill -9 "$(cat "$RABBITMQ_PID_FILE")" 2>/dev/null || true
      elif pid_alive "$BASE/$name/pid"; then kill -9 "$(cat "$BASE/$name/pid")" || true
      fi ;;
    *)
      if pid_alive "$BASE/$name/pid"; then
        kill "$(cat "$BASE/$name/pid")" 2>/dev/null || true
        for _ in $(seq 50); do pid_alive "$BASE/$name/pid" || break; sleep 0.1; done
        pid_alive "$BASE/$name/pid" && kill -9 "$(cat "$BASE/$name/pid")" 2>/dev/null || true
      fi ;;
  esac
}

cmd_stop() {
  [ -f "$REGISTRY" ] || { log "nothing registered in $REGISTRY"; return 0; }
  local name
  while read -r name _; do stop_one "$name" & done < "$REGISTRY"
  wait
  rm -f "$REGISTRY"
  # epmd was started by the first node; stop it once no node is registered.
  if command -v epmd >/dev/null && ! ERL_EPMD_ADDRESS=127.0.0.1 epmd -names 2>/dev/null | grep -q '^name '; then
    ERL_EPMD_ADDRESS=127.0.0.1 epmd -kill >/dev/null 2>&1 || true
  fi
  log "stopped"
}

cmd_kill() {  # kill -9, keeping the registry entry so 'restart' knows it
  local name=$1 pidf
  case "$name" in rabbit*) rabbit_env "${name#rabbit}"; pidf=$RABBITMQ_PID_FILE ;; *) pidf=$BASE/$name/pid ;; esac
  pid_alive "$pidf" || die "$name is not running"
  kill -9 "$(cat "$pidf")"
  for _ in $(seq 100); do pid_alive "$pidf" || break; sleep 0.05; done
  log "killed $name"
}

cmd_restart() {
  local name=$1
  case "$name" in
    rabbit*) start_rabbit "${name#rabbit}" ;;
    proton*) start_proton_c "${name#proton}" ;;
    pyproton*) start_proton_py "${name#pyproton}" ;;
    *) die "restart: unknown broker '$name'" ;;
  esac
}

cmd_status() {
  [ -f "$REGISTRY" ] || { log "no brokers registered"; return 0; }
  local name kind url mgmt pid state
  while read -r name kind url mgmt pid; do
    state=down; echo "$pid" > "$BASE/.status.pid"; pid_alive "$BASE/.status.pid" && state=up
    printf '%-10s %-9s %-4s %-26s mgmt=%s pid=%s\n' "$name" "$kind" "$state" "$url" "$mgmt" "$pid"
  done < "$REGISTRY"
}

case "${1:-}" in
  install) cmd_install ;;
  start) shift; cmd_start "$@" ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  kill) [ $# = 2 ] || die "usage: $0 kill NAME"; cmd_kill "$2" ;;
  restart) [ $# = 2 ] || die "usage: $0 restart NAME"; cmd_restart "$2" ;;
  *) die "usage: $0 install | start [-r N] [-p N] [-y N] | stop | status | kill NAME | restart NAME" ;;
esac
