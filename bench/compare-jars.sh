#!/usr/bin/env bash
# Start-run throughput of two Runway jars side by side: rounds of A then B, each on a fresh database
# (H2, and PostgreSQL when one answers), so that the machine's drift falls on both alike. Prints
# each measurement, then the median req/s and p99 of each jar and the ratio B/A per database.
#
#   bench/compare-jars.sh OLD.jar NEW.jar     # needs wrk (Debian: apt-get install wrk)
#
# A jar of an earlier commit: git worktree add /tmp/old <commit> && (cd /tmp/old && mvn -B -q -DskipTests package).
# Settings: BENCH_ROUNDS (3), BENCH_CONNECTIONS (32), BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (30),
# BENCH_PG_USER (postgres). The servers run as bench/run.sh runs them (config/jvm.options, no
# request log, no per-key rate limit or run quota: one key sends all the load).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
A=$(realpath "$1")
B=$(realpath "$2")
ROUNDS=${BENCH_ROUNDS:-3}
CONNS=${BENCH_CONNECTIONS:-32}
SECS=${BENCH_SECONDS:-10}
WARM=${BENCH_WARMUP_SECONDS:-30}
PG_USER=${BENCH_PG_USER:-postgres}
OPTS=$(grep -v '^#' config/jvm.options | tr '\n' ' ')
export MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-2}

command -v wrk >/dev/null || { echo "bench: wrk is missing (Debian: apt-get install wrk)" >&2; exit 2; }
SERVER=
trap '[ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null || true' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; printf "%.2f", v}'; }
pg() { psql "postgresql://$PG_USER@127.0.0.1:5432/postgres" -qc "$1" >/dev/null; }

one() {  # jar db -> prints "req/s p99-ms"
  local jar=$1 db=$2 work port pid url name key
  work=$(mktemp -d /tmp/runway-compare-XXXX)
  port=$(free_port)
  if [ "$db" = h2 ]; then
    url="jdbc:h2:file:$work/runway;AUTO_SERVER=TRUE"
  else
    name="runway_compare_$$_$RANDOM"
    pg "CREATE DATABASE $name"
    url="jdbc:postgresql://127.0.0.1:5432/$name"
  fi
  export RUNWAY_HTTP_PORT=$port RUNWAY_DB_URL=$url RUNWAY_DB_USER=$([ "$db" = h2 ] && echo sa || echo "$PG_USER") \
    RUNWAY_DB_PASSWORD= RUNWAY_WORKFLOWS_DIR=$ROOT/config/workflows RUNWAY_HTTP_REQUEST_LOG=false \
    RUNWAY_RATELIMIT_PER_KEY_PER_SECOND=0 RUNWAY_QUOTAS_RUNS_PER_MINUTE_PER_WORKSPACE=0 \
    RUNWAY_BOOTSTRAP_ADMIN_KEY=false RUNWAY_HTTP_MAX_IN_FLIGHT_PER_KEY=100000
  key=$(cd "$work" && java -jar "$jar" keys create --workspace default --name bench 2>/dev/null)
  export RUNWAY_BENCH_KEY=$key
  (cd "$work" && exec java $OPTS -jar "$jar" >"$work/server.log" 2>&1) & pid=$!
  SERVER=$pid
  for _ in $(seq 1 600); do curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && break; sleep 0.05; done
  wrk -t2 -c"$CONNS" -d"${WARM}s" -s bench/post.lua "http://127.0.0.1:$port/v1/workflows/hello/runs" >/dev/null
  wrk -t2 -c"$CONNS" -d"${SECS}s" --latency -s bench/post.lua "http://127.0.0.1:$port/v1/workflows/hello/runs" \
    | awk '/Requests\/sec/ {r = $2} $1 == "99%" {p = $2} END {print r, p}' | { read -r r p; echo "$r $(echo "$p" | to_ms)"; }
  kill -TERM "$pid"; wait "$pid" || true
  SERVER=
  [ "$db" = h2 ] || pg "DROP DATABASE $name"
  rm -rf "$work"
}

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

DBS=(h2)
pg "SELECT 1" 2>/dev/null && DBS+=(postgresql) || echo "bench: PostgreSQL does not answer: H2 only" >&2
echo "A = $A"
echo "B = $B"
echo "wrk -t2 -c$CONNS -d${SECS}s on POST /v1/workflows/hello/runs after ${WARM}s of warm-up, $ROUNDS rounds of A then B"
for db in "${DBS[@]}"; do
  : >"/tmp/compare-$$-A" && : >"/tmp/compare-$$-B"
  for round in $(seq 1 "$ROUNDS"); do
    for side in A B; do
      jar=$A; [ "$side" = B ] && jar=$B
      result=$(one "$jar" "$db")
      echo "$result" >>"/tmp/compare-$$-$side"
      echo "$db round $round $side: $(echo "$result" | awk '{printf "%.0f req/s, p99 %s ms", $1, $2}')"
    done
  done
  ra=$(awk '{print $1}' "/tmp/compare-$$-A" | median); rb=$(awk '{print $1}' "/tmp/compare-$$-B" | median)
  pa=$(awk '{print $2}' "/tmp/compare-$$-A" | median); pb=$(awk '{print $2}' "/tmp/compare-$$-B" | median)
  printf '%s medians: A %.0f req/s (p99 %s ms), B %.0f req/s (p99 %s ms), B/A %.2f\n' "$db" "$ra" "$pa" "$rb" "$pb" \
    "$(awk -v a="$ra" -v b="$rb" 'BEGIN {print b / a}')"
  rm -f "/tmp/compare-$$-A" "/tmp/compare-$$-B"
done
