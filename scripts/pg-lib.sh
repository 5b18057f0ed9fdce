# shellcheck shell=bash
# Sourced by pg-cluster.sh and cluster.sh, which define die: where PostgreSQL's server binaries
# are, and how root runs them.

# pg_bindir TOOL...: sets BIN to PG_BINDIR, else pg_config's bindir, else the highest
# /usr/lib/postgresql/*/bin; it must hold every TOOL.
pg_bindir() {
  local dir tool
  if [[ -n ${PG_BINDIR:-} ]]; then
    dir=$PG_BINDIR
  elif command -v pg_config >/dev/null && dir=$(pg_config --bindir 2>/dev/null) && [[ -x $dir/initdb ]]; then
    :
  else
    # Highest version; Debian's pg_config may belong to libpq-dev without a server.
    dir=$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n 1)
  fi
  for tool in "$@"; do
    [[ -n $dir && -x $dir/$tool ]] ||
      die "no PostgreSQL server binaries ($*) found (PG_BINDIR, pg_config --bindir, /usr/lib/postgresql/*/bin); install postgresql postgresql-contrib"
  done
  BIN=$dir
}

# PostgreSQL and PgBouncer refuse to run as root, so root delegates to the postgres user.
as_pg() {
  if ((EUID == 0)); then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# wait_ready PORT WHAT: until the server on PORT takes connections, 30 s at most.
wait_ready() {
  local i
  for ((i = 0; i < 150; i++)); do
    "$BIN/pg_isready" -q -h 127.0.0.1 -p "$1" -U postgres -d postgres && return
    sleep 0.2
  done
  die "$2 on 127.0.0.1:$1 is not accepting connections (logs in $DIR)"
}
