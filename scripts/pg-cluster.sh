#!/usr/bin/env bash
# Throwaway PostgreSQL cluster on 127.0.0.1, for CI and tests.
#
#   scripts/pg-cluster.sh start DIR PORT   init DIR if needed, start, print the URL
#   scripts/pg-cluster.sh stop DIR         stop it (exit 0 if it is not running)
#
# start prints exactly one line on stdout: postgres://plinth@127.0.0.1:PORT/plinth
# (role plinth is a superuser). Everything else goes to stderr.
# Layout: DIR/data (PGDATA), DIR/postgres.log, and the unix socket in DIR.
# As root, the server runs as the `postgres` system user, which must be able to
# reach DIR: use a directory under /tmp, e.g. "$(mktemp -d /tmp/pg.XXXXXX)".
# PG_BINDIR overrides where the PostgreSQL server binaries are looked up.
set -euo pipefail

log() { echo "pg-cluster: $*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { die "usage: $0 start DIR PORT | $0 stop DIR"; }

# shellcheck source=scripts/pg-lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/pg-lib.sh"

prepare_dir() {
  mkdir -p "$DIR"
  if ((EUID == 0)); then
    id postgres >/dev/null 2>&1 || die "running as root needs a 'postgres' system user (Debian's postgresql package creates it)"
    chown postgres: "$DIR"
  fi
  chmod 0700 "$DIR"
  as_pg test -w "$DIR" -a -x "$DIR" ||
    die "$DIR is not reachable by the server user (a parent directory is not traversable?); use a directory under /tmp"
}

# A killed postmaster can linger as a zombie until PID 1 reaps it (about a
# second here); pg_ctl and the postmaster's lock file check would take it for alive.
wait_zombie_gone() {
  local pid i
  pid=$(sed -n 1p "$DATA/postmaster.pid" 2>/dev/null) || return 0
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  for ((i = 0; i < 50; i++)); do
    [[ $(cat "/proc/$pid/stat" 2>/dev/null) =~ ^[0-9]+\ \(.*\)\ Z ]] || return 0
    sleep 0.2
  done
}

is_running() {
  [[ -f $DATA/PG_VERSION ]] || return 1
  wait_zombie_gone
  as_pg "$BIN/pg_ctl" status -D "$DATA" >/dev/null 2>&1
}

init_cluster() {
  log "initdb $DATA"
  if ! as_pg "$BIN/initdb" -D "$DATA" -U postgres --locale=C --encoding=UTF8 \
      --auth=trust --no-sync >"$DIR/initdb.log" 2>&1; then
    cat "$DIR/initdb.log" >&2
    die "initdb failed"
  fi
  printf '%s\n' \
    'local all all trust' \
    'host  all all 127.0.0.1/32 trust' | as_pg tee "$DATA/pg_hba.conf" >/dev/null
  printf '%s\n' \
    "listen_addresses = '127.0.0.1'" \
    "unix_socket_directories = '$DIR'" | as_pg tee -a "$DATA/postgresql.conf" >/dev/null
}

running_port() {
  # 4th line of postmaster.pid is the port.
  sed -n 4p "$DATA/postmaster.pid" 2>/dev/null || true
}

start_server() {
  if is_running; then
    [[ $(running_port) == "$PORT" ]] || die "cluster in $DIR is already running on port $(running_port), not $PORT"
    log "already running on port $PORT"
    return
  fi
  log "starting on 127.0.0.1:$PORT"
  if ! as_pg "$BIN/pg_ctl" start -D "$DATA" -l "$DIR/postgres.log" -w -t 60 -o "-p $PORT" >/dev/null 2>&1; then
    tail -n 20 "$DIR/postgres.log" >&2 || true
    die "pg_ctl start failed (log: $DIR/postgres.log)"
  fi
}

ensure_role_and_db() {
  "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres -d postgres >/dev/null <<'SQL'
SELECT 'CREATE ROLE plinth LOGIN SUPERUSER'
  WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'plinth')\gexec
SELECT 'CREATE DATABASE plinth OWNER plinth'
  WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'plinth')\gexec
SQL
}

cmd_start() {
  if ! [[ $PORT =~ ^[0-9]+$ ]] || ((PORT < 1 || PORT > 65535)); then
    die "bad port: $PORT"
  fi
  ((PORT != 5432)) || die "refusing port 5432 (reserved for the system cluster)"
  prepare_dir
  [[ -f $DATA/PG_VERSION ]] || init_cluster
  start_server
  wait_ready "$PORT" server
  ensure_role_and_db
  echo "postgres://plinth@127.0.0.1:$PORT/plinth"
}

cmd_stop() {
  if ! is_running; then
    log "not running in $DIR"
    return
  fi
  log "stopping $DIR"
  as_pg "$BIN/pg_ctl" stop -D "$DATA" -m fast -w -t 60 >/dev/null 2>&1 ||
    as_pg "$BIN/pg_ctl" stop -D "$DATA" -m immediate -w -t 30 >/dev/null 2>&1 ||
    die "could not stop the server in $DIR"
}

main() {
  local cmd=${1:-}
  case $cmd in
    start) (($# == 3)) || usage ;;
    stop) (($# == 2)) || usage ;;
    *) usage ;;
  esac
  [[ -n $2 ]] || usage
  DIR=$(realpath -m -- "$2")
  DATA=$DIR/data
  PORT=${3:-}
  pg_bindir initdb pg_ctl postgres pg_isready
  cd /  # the server user may not be able to read the caller's working directory
  "cmd_$cmd"
}

main "$@"
