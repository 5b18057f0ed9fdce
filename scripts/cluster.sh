#!/usr/bin/env bash
# The database side of the reference deployment, as throwaway processes on 127.0.0.1, for the
# cluster tests (test/cluster) and for trying a multi-instance setup by hand.
#
#   scripts/cluster.sh start DIR [REPLICA_DELAY_MS]   start everything below, print the URLs
#   scripts/cluster.sh stop DIR                       stop what start started (exit 0 if nothing runs)
#   scripts/cluster.sh status DIR                     one line per process: name, pid, up or down
#
# start brings up, each on a free port of 127.0.0.1:
#   - a primary PostgreSQL (wal_level replica, replication allowed from 127.0.0.1), role and
#     database `plinth` (a superuser, trust auth);
#   - a streaming replica made with `pg_basebackup -R`, hot_standby on, applying WAL
#     REPLICA_DELAY_MS (default $CLUSTER_REPLICA_DELAY_MS, else 0) after the primary's commits;
#   - two PgBouncers in front of the primary, pool_mode session (a pool of $CLUSTER_SESSION_POOL,
#     default 60, server connections) and pool_mode transaction (20), each taking 1000 clients.
# It prints one env-style block on stdout (PRIMARY_URL, REPLICA_URL, BOUNCER_SESSION_URL,
# BOUNCER_TRANSACTION_URL and their *_PORT), also written to DIR/cluster.env; the rest goes to
# stderr. It starts neither node nor nginx: the tests run those.
#
# Nothing outlives its owner: start also leaves a watchdog that runs `stop DIR` once the process
# that called start ($CLUSTER_OWNER_PID, else the caller) is gone, or after $CLUSTER_MAX_SECONDS
# (default 1800). stop also ends the processes whose pids the tests wrote in DIR/procs/NAME.pid
# (node instances, nginx). DIR should be new and under /tmp (`mktemp -d /tmp/plinth-cluster.XXXXXX`):
# as root the servers run as the `postgres` user, which must reach it. Nothing outside DIR is touched.
set -euo pipefail

log() { echo "cluster: $*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { die "usage: $0 start DIR [REPLICA_DELAY_MS] | $0 stop DIR | $0 status DIR"; }

SELF=$(realpath -- "${BASH_SOURCE[0]}")
# shellcheck source=scripts/pg-lib.sh
source "$(dirname -- "$SELF")/pg-lib.sh"

find_bindir() {
  pg_bindir initdb pg_ctl pg_basebackup psql pg_isready
  PGBOUNCER=${PGBOUNCER:-$(command -v pgbouncer || echo /usr/sbin/pgbouncer)}
  [[ -x $PGBOUNCER ]] || die "pgbouncer not found (apt-get install pgbouncer)"
}

# A port no one listens on, below the kernel's range for outgoing connections (whose local ports
# would otherwise collide with it) and outside 55432-55440 (the dev cluster's range).
free_port() {
  local port low
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
  ((low > 20000)) || low=32768
  while :; do
    port=$((20000 + RANDOM % (low - 20000)))
    ((port >= 55432 && port <= 55440)) && continue
    grep -q " $port\$" "$DIR/ports" 2>/dev/null && continue
    ss -Htln "sport = :$port" 2>/dev/null | grep -q . && continue
    echo "$port"
    return
  done
}

pg_dir() {
  mkdir -p "$1"
  if ((EUID == 0)); then chown postgres: "$1"; fi
  chmod 0700 "$1"
}

psql_at() { # PORT DB SQL...
  local port=$1 db=$2
  shift 2
  "$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d "$db" "$@"
}

pg_start() { # NAME PORT: the server in DIR/NAME, logging to DIR/NAME.log
  as_pg "$BIN/pg_ctl" start -D "$DIR/$1" -l "$DIR/$1.log" -w -t 60 >/dev/null 2>&1 ||
    { tail -n 20 "$DIR/$1.log" >&2 || true; die "the $1 did not start (log: $DIR/$1.log)"; }
  wait_ready "$2" "$1"
}

start_primary() {
  local data=$DIR/primary
  pg_dir "$data"
  log "initdb $data"
  as_pg "$BIN/initdb" -D "$data" -U postgres --locale=C --encoding=UTF8 --auth=trust --no-sync >"$DIR/initdb.log" 2>&1 ||
    { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
  printf '%s\n' \
    'local all         all trust' \
    'host  all         all 127.0.0.1/32 trust' \
    'local replication all trust' \
    'host  replication all 127.0.0.1/32 trust' | as_pg tee "$data/pg_hba.conf" >/dev/null
  # Throwaway data: durability off for speed; the tests kill node processes, never PostgreSQL.
  printf '%s\n' \
    "listen_addresses = '127.0.0.1'" \
    "port = $PRIMARY_PORT" \
    "unix_socket_directories = '$data'" \
    'wal_level = replica' \
    'max_wal_senders = 5' \
    'max_connections = 400' \
    'fsync = off' \
    'full_page_writes = off' \
    'shared_buffers = 64MB' | as_pg tee -a "$data/postgresql.conf" >/dev/null
  log "primary on 127.0.0.1:$PRIMARY_PORT"
  pg_start primary "$PRIMARY_PORT"
  psql_at "$PRIMARY_PORT" postgres -c 'CREATE ROLE plinth LOGIN SUPERUSER' -c 'CREATE DATABASE plinth OWNER plinth' >/dev/null
}

start_replica() {
  local data=$DIR/replica
  pg_dir "$data"
  log "pg_basebackup into $data"
  as_pg "$BIN/pg_basebackup" -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -D "$data" -R -X stream --checkpoint=fast \
    >"$DIR/basebackup.log" 2>&1 || { cat "$DIR/basebackup.log" >&2; die "pg_basebackup failed"; }
  # Later lines win over the primary's copied settings.
  printf '%s\n' \
    "port = $REPLICA_PORT" \
    "unix_socket_directories = '$data'" \
    'hot_standby = on' \
    "recovery_min_apply_delay = '${DELAY_MS}ms'" | as_pg tee -a "$data/postgresql.conf" >/dev/null
  log "replica on 127.0.0.1:$REPLICA_PORT, applying ${DELAY_MS} ms behind"
  pg_start replica "$REPLICA_PORT"
  local i
  for ((i = 0; i < 150; i++)); do
    [[ $(psql_at "$REPLICA_PORT" postgres -c "select status from pg_stat_wal_receiver" 2>/dev/null) == streaming ]] && return
    sleep 0.2
  done
  die "the replica does not stream from the primary (log: $DIR/replica.log)"
}

start_bouncer() { # MODE PORT POOL_SIZE
  local mode=$1 port=$2 pool=$3 conf=$DIR/bouncer/$1.ini
  log "pgbouncer ($mode pooling) on 127.0.0.1:$port"
  # auth_type trust still needs each user name in the auth_file.
  printf '"plinth" ""\n"postgres" ""\n' | as_pg tee "$DIR/bouncer/users.txt" >/dev/null
  as_pg tee "$conf" >/dev/null <<INI
[databases]
* = host=127.0.0.1 port=$PRIMARY_PORT

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $DIR/bouncer/users.txt
admin_users = postgres, plinth
pool_mode = $mode
max_client_conn = 1000
default_pool_size = $pool
max_db_connections = 100
ignore_startup_parameters = extra_float_digits,options
logfile = $DIR/bouncer-$mode.log
pidfile = $DIR/bouncer/$mode.pid
INI
  as_pg "$PGBOUNCER" -d -q "$conf" || die "pgbouncer ($mode) did not start (log: $DIR/bouncer-$mode.log)"
  wait_ready "$port" "pgbouncer ($mode)"
}

pids() { # name pid, for every process start may have left, and those the tests started (DIR/procs)
  local data pid mode file
  for file in "$DIR"/procs/*.pid; do
    [[ -f $file ]] || continue
    pid=$(cat "$file" 2>/dev/null || true)
    [[ $pid =~ ^[0-9]+$ ]] && echo "$(basename "$file" .pid) $pid"
  done
  for data in primary replica; do
    pid=$(sed -n 1p "$DIR/$data/postmaster.pid" 2>/dev/null || true)
    [[ $pid =~ ^[0-9]+$ ]] && echo "$data $pid"
  done
  for mode in session transaction; do
    pid=$(cat "$DIR/bouncer/$mode.pid" 2>/dev/null || true)
    [[ $pid =~ ^[0-9]+$ ]] && echo "bouncer-$mode $pid"
  done
  pid=$(cat "$DIR/watchdog.pid" 2>/dev/null || true)
  [[ $pid =~ ^[0-9]+$ ]] && echo "watchdog $pid"
  return 0
}

# A live process, not a zombie waiting to be reaped.
alive() { [[ -e /proc/$1 && ! $(cat "/proc/$1/stat" 2>/dev/null) =~ ^[0-9]+\ \(.*\)\ Z ]]; }

cmd_status() {
  local name pid
  while read -r name pid; do
    if alive "$pid"; then echo "$name $pid up"; else echo "$name $pid down"; fi
  done < <(pids)
}

cmd_stop() {
  [[ -d $DIR ]] || { log "no $DIR"; return; }
  local name pid i
  find_bindir
  while read -r name pid; do
    alive "$pid" || continue
    case $name in
      primary | replica)
        log "stopping the $name"
        as_pg "$BIN/pg_ctl" stop -D "$DIR/$name" -m immediate -w -t 30 >/dev/null 2>&1 || kill -KILL "$pid" 2>/dev/null || true
        ;;
      watchdog)
        # The watchdog runs stop itself: it must not kill the shell it is running in.
        [[ $pid == "${WATCHDOG_SELF:-}" ]] || kill -TERM "$pid" 2>/dev/null || true
        ;;
      *)
        log "stopping $name"
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
        alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
        ;;
    esac
  done < <(pids)
  return 0
}

# Runs `stop DIR` once OWNER is gone or the time is up: the tests' teardown may never run.
cmd_watch() {
  local owner=$1 deadline=$((SECONDS + ${CLUSTER_MAX_SECONDS:-1800}))
  while alive "$owner" && ((SECONDS < deadline)); do sleep 1; done
  log "watchdog: $( ((SECONDS < deadline)) && echo "process $owner is gone" || echo 'time is up'), stopping $DIR"
  WATCHDOG_SELF=$BASHPID cmd_stop
}

cmd_start() {
  [[ $DELAY_MS =~ ^[0-9]+$ ]] || die "bad REPLICA_DELAY_MS: $DELAY_MS"
  mkdir -p "$DIR"
  [[ ! -e $DIR/primary ]] || die "$DIR already holds a cluster; stop it and use a new directory"
  command -v ss >/dev/null || die "ss (iproute2) is needed to find free ports"
  find_bindir
  # The servers write their logs in DIR; the nginx workers the tests start only need to reach it.
  if ((EUID == 0)); then chown postgres: "$DIR"; fi
  chmod 0755 "$DIR"
  pg_dir "$DIR/bouncer"
  : >"$DIR/ports"
  local owner=${CLUSTER_OWNER_PID:-$PPID}
  # A start that fails half-way leaves nothing running.
  trap 'cmd_stop' EXIT
  PRIMARY_PORT=$(free_port) && echo "primary $PRIMARY_PORT" >>"$DIR/ports"
  REPLICA_PORT=$(free_port) && echo "replica $REPLICA_PORT" >>"$DIR/ports"
  SESSION_PORT=$(free_port) && echo "bouncer-session $SESSION_PORT" >>"$DIR/ports"
  TRANSACTION_PORT=$(free_port) && echo "bouncer-transaction $TRANSACTION_PORT" >>"$DIR/ports"
  # The watchdog first, so a start killed half-way is cleaned up too.
  setsid "$SELF" watch "$DIR" "$owner" </dev/null >>"$DIR/watchdog.log" 2>&1 &
  echo $! >"$DIR/watchdog.pid"
  start_primary
  start_replica
  # Session pooling pins a server connection to each client connection, so its pool holds every
  # instance's whole pool (10 each, plus the change feed's LISTEN); transaction pooling shares 20.
  start_bouncer session "$SESSION_PORT" "${CLUSTER_SESSION_POOL:-60}"
  start_bouncer transaction "$TRANSACTION_PORT" 20
  trap - EXIT
  local url=postgres://plinth@127.0.0.1
  cat >"$DIR/cluster.env" <<ENV
PRIMARY_URL=$url:$PRIMARY_PORT/plinth
REPLICA_URL=$url:$REPLICA_PORT/plinth
BOUNCER_SESSION_URL=$url:$SESSION_PORT/plinth
BOUNCER_TRANSACTION_URL=$url:$TRANSACTION_PORT/plinth
PRIMARY_PORT=$PRIMARY_PORT
REPLICA_PORT=$REPLICA_PORT
BOUNCER_SESSION_PORT=$SESSION_PORT
BOUNCER_TRANSACTION_PORT=$TRANSACTION_PORT
REPLICA_DELAY_MS=$DELAY_MS
ENV
  cat "$DIR/cluster.env"
}

main() {
  local cmd=${1:-}
  case $cmd in
    start) (($# == 2 || $# == 3)) || usage ;;
    stop | status) (($# == 2)) || usage ;;
    watch) (($# == 3)) || usage ;;
    *) usage ;;
  esac
  [[ -n $2 ]] || usage
  DIR=$(realpath -m -- "$2")
  DELAY_MS=${CLUSTER_REPLICA_DELAY_MS:-0}
  if [[ $cmd == start && $# == 3 ]]; then DELAY_MS=$3; fi
  cd /  # the server user may not be able to read the caller's working directory
  case $cmd in
    watch) cmd_watch "$3" ;;
    *) "cmd_$cmd" ;;
  esac
}

main "$@"
