#!/usr/bin/env bash
# The whole test suite on PostgreSQL through PgBouncer in transaction pooling, as a deployment with
# DATABASE_POOL_MODE=transaction runs: a throwaway primary and PgBouncers from scripts/cluster.sh,
# stopped at the end. Arguments go to tap, e.g. `npm run test:pooled -- --reporter=tap`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

DIR=$(mktemp -d /tmp/plinth-pooled.XXXXXX)
cleanup() { bash scripts/cluster.sh stop "$DIR" >&2 || true; rm -rf "$DIR"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# The watchdog outlives a run of the suite at most by this much.
CLUSTER_MAX_SECONDS=${CLUSTER_MAX_SECONDS:-3600} bash scripts/cluster.sh start "$DIR" >/dev/null
# shellcheck source=/dev/null
source "$DIR/cluster.env"
echo "pooled suite: PgBouncer (transaction) at $BOUNCER_TRANSACTION_URL, LISTEN at $PRIMARY_URL" >&2
TEST_DATABASE_URL=$BOUNCER_TRANSACTION_URL TEST_DATABASE_LISTEN_URL=$PRIMARY_URL TEST_DATABASE_POOL_MODE=transaction \
  npm test -- --disable-coverage "$@"
