#!/usr/bin/env bash
# Throughput and latency of Runway's hot paths, measured on the packaged jar: GET /healthz,
# POST /v1/workflows/{id}/runs (durable) and GET /v1/runs/{id}, on a fresh H2 database and, when
# one answers, a fresh PostgreSQL database. Also: start-up time to the first 200 on /readyz on an
# existing database, resident memory after a long load of start-run (with that load's own
# throughput, p99 and, on H2, the database file's size), and overload: start-run from far more
# connections than the server admits at once (the answers by status, their latency, /readyz and
# resident memory meanwhile, and a start-run right after). Prints one table.
#
#   ./run.sh --help >/dev/null          # builds target/runway.jar if needed
#   bench/run.sh                        # needs wrk (Debian: apt-get install wrk)
#
# Settings: BENCH_CONNECTIONS (32), BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (30: the JIT needs about that long on 2 cores),
# BENCH_SOAK_SECONDS (60; 0 skips the memory soak), BENCH_OVERLOAD_SECONDS (30; 0 skips the
# overload), BENCH_OVERLOAD_CONNECTIONS (2000: http.max_in_flight is 160), BENCH_PG_URL
# (jdbc:postgresql://127.0.0.1:5432/postgres), BENCH_PG_USER (postgres), BENCH_PG_PASSWORD.
# The server runs as ./run.sh starts it (config/jvm.options, class-data sharing) with default settings, except: the
# per-key rate limit is off (one key sends everything) and the request log is off (it goes to a
# file here and measures the disk, not Runway).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JAR=$ROOT/target/runway.jar
CONNS=${BENCH_CONNECTIONS:-32}
SECS=${BENCH_SECONDS:-10}
WARM=${BENCH_WARMUP_SECONDS:-30}
SOAK=${BENCH_SOAK_SECONDS:-60}
OVER=${BENCH_OVERLOAD_SECONDS:-30}
OVER_CONNS=${BENCH_OVERLOAD_CONNECTIONS:-2000}
PG_URL=${BENCH_PG_URL:-jdbc:postgresql://127.0.0.1:5432/postgres}
PG_USER=${BENCH_PG_USER:-postgres}
PG_PASSWORD=${BENCH_PG_PASSWORD:-}
OPTS=$(grep -v '^#' config/jvm.options | tr '\n' ' ')
export MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-2}  # as ./run.sh sets it

command -v wrk >/dev/null || { echo "bench: wrk is missing (Debian: apt-get install wrk)" >&2; exit 2; }
[ -f "$JAR" ] || { echo "bench: no $JAR; run ./run.sh --help or mvn -B -DskipTests package first" >&2; exit 2; }

# A server this script started is stopped when the script ends, also when a step fails.
SERVER=
trap '[ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null || true' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; printf "%.2f", v}'; }
await_ready() {  # prints milliseconds from $2 (epoch ms) until /readyz answers 200
  for _ in $(seq 1 600); do
    if curl -sf -o /dev/null "http://127.0.0.1:$1/readyz"; then echo $(( $(date +%s%3N) - $2 )); return; fi
    sleep 0.02
  done
  echo "bench: server did not become ready" >&2; exit 1
}

non_2xx() { echo "$1" | awk '/Non-2xx/ {n = $NF} END {print n + 0}'; }  # wrk's count, 0 when it prints none

ROWS=()
measure() {  # label db url script -> appends a row: db, endpoint, req/s, p50, p99
  local label=$1 db=$2 url=$3 script=${4:-}
  add_row "$label" "$db" "$(wrk -t2 -c"$CONNS" -d"${SECS}s" --latency ${script:+-s "$script"} "$url")"
}
add_row() {  # label db wrk-output
  local label=$1 db=$2 out=$3 rps p50 p99 errs
  rps=$(echo "$out" | awk '/Requests\/sec/ {printf "%.0f", $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}' | to_ms)
  p99=$(echo "$out" | awk '$1=="99%" {print $2}' | to_ms)
  errs=$(non_2xx "$out")
  ROWS+=("$db|$label|$rps|$p50|$p99|$errs")
}

watch_server() {  # port pid file: every 0.5 s, /readyz's status and time in ms, and resident MB
  while true; do
    echo "$(curl -s -o /dev/null -m 10 -w '%{http_code} %{time_total}' "http://127.0.0.1:$1/readyz") $(awk '/VmRSS/ {print int($2/1024)}' "/proc/$2/status")" >>"$3"
    sleep 0.5
  done
}

overload() {  # db port pid work -> appends a row, sets OVERLOADED[db]
  local db=$1 port=$2 pid=$3 work=$4 watcher out after
  echo "bench: $db: ${OVER}s of start-run at $OVER_CONNS connections (overload)" >&2
  : >"$work/watch"
  watch_server "$port" "$pid" "$work/watch" & watcher=$!
  out=$(wrk -t2 -c"$OVER_CONNS" -d"${OVER}s" --latency -s bench/overload.lua "http://127.0.0.1:$port/v1/workflows/hello/runs")
  kill "$watcher"; wait "$watcher" 2>/dev/null || true
  add_row "POST runs, $OVER_CONNS connections" "$db" "$out"
  after=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/v1/workflows/hello/runs" \
    -H "Authorization: Bearer $RUNWAY_BENCH_KEY" -H 'Content-Type: application/json' -d '{"project":"bench"}')
  OVERLOADED[$db]="$(echo "$out" | awk '/^status/ {printf "%s%s %s", sep, $2, $3; sep=", "}' | tr -d :)"
  OVERLOADED[$db]+="$(echo "$out" | awk '/Socket errors/ {sub(/^ */, ""); printf "; %s", $0}')"
  # /readyz from a new connection: its status (000: no answer within 10 s) and time, every 0.5 s.
  if [ -s "$work/watch" ]; then
    OVERLOADED[$db]+="; meanwhile /readyz $(awk '{print $1}' "$work/watch" | sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')"
    OVERLOADED[$db]+=" (slowest $(awk '{if ($2 > m) m = $2} END {printf "%.0f", m * 1000}' "$work/watch") ms)"
    OVERLOADED[$db]+=", resident memory at most $(awk '{if ($3 > m) m = $3} END {print m}' "$work/watch") MB"
  fi
  OVERLOADED[$db]+="; a start-run right after: $after"
}

bench_db() {  # db-label jdbc-url user password
  local db=$1 url=$2 user=$3 password=$4 work port pid key run t0 out file
  work=$(mktemp -d /tmp/runway-bench-XXXX)
  port=$(free_port)
  export RUNWAY_HTTP_PORT=$port RUNWAY_DB_URL=$url RUNWAY_DB_USER=$user RUNWAY_DB_PASSWORD=$password \
    RUNWAY_WORKFLOWS_DIR=$ROOT/config/workflows RUNWAY_HTTP_REQUEST_LOG=false \
    RUNWAY_RATELIMIT_PER_KEY_PER_SECOND=0 RUNWAY_QUOTAS_RUNS_PER_MINUTE_PER_WORKSPACE=0 RUNWAY_BOOTSTRAP_ADMIN_KEY=false \
    RUNWAY_HTTP_MAX_IN_FLIGHT_PER_KEY=100000  # one key sends all the load: the server's own limits are measured
  key=$(cd "$work" && java -jar "$JAR" keys create --workspace default --name bench 2>/dev/null)
  export RUNWAY_BENCH_KEY=$key
  # As ./run.sh does: this run records a class-data-sharing archive at exit, the restart below uses it.
  (cd "$work" && exec java $OPTS -XX:ArchiveClassesAtExit="$work/runway.jsa" -Xlog:cds=off -Xlog:cds+dynamic=off \
    -jar "$JAR" >"$work/server.log" 2>&1) & pid=$!
  SERVER=$pid
  await_ready "$port" "$(date +%s%3N)" >/dev/null
  run=$(curl -s -X POST "http://127.0.0.1:$port/v1/workflows/hello/runs" -H "Authorization: Bearer $key" \
    -H 'Content-Type: application/json' -d '{"project":"bench"}' | python3 -c 'import sys,json; print(json.load(sys.stdin)["id"])')
  export RUNWAY_BENCH_RUN=$run
  echo "bench: $db: warming up (${WARM}s)" >&2
  wrk -t2 -c"$CONNS" -d"${WARM}s" -s bench/post.lua "http://127.0.0.1:$port/v1/workflows/hello/runs" >/dev/null
  wrk -t2 -c"$CONNS" -d"$(( WARM / 2 + 1 ))s" -s bench/get.lua "http://127.0.0.1:$port/" >/dev/null
  wrk -t2 -c"$CONNS" -d"$(( WARM / 2 + 1 ))s" "http://127.0.0.1:$port/healthz" >/dev/null
  echo "bench: $db: measuring (${SECS}s each)" >&2
  measure "GET /healthz" "$db" "http://127.0.0.1:$port/healthz"
  measure "POST /v1/workflows/{id}/runs" "$db" "http://127.0.0.1:$port/v1/workflows/hello/runs" bench/post.lua
  measure "GET /v1/runs/{id}" "$db" "http://127.0.0.1:$port/" bench/get.lua
  if [ "$SOAK" -gt 0 ]; then
    echo "bench: $db: ${SOAK}s of start-run load for the memory figure" >&2
    out=$(wrk -t2 -c"$CONNS" -d"${SOAK}s" --latency -s bench/post.lua "http://127.0.0.1:$port/v1/workflows/hello/runs")
    RSS[$db]=$(awk '/VmRSS/ {printf "%.0f MB", $2/1024}' "/proc/$pid/status")
    SOAKED[$db]="start-run $(echo "$out" | awk '/Requests\/sec/ {printf "%.0f", $2}')/s, p99 $(echo "$out" | awk '$1=="99%" {print $2}' | to_ms) ms, $(non_2xx "$out") non-2xx"
    if [ "$db" = h2 ]; then
      file=${url#jdbc:h2:file:}; file=${file%%;*}.mv.db
      SOAKED[$db]+=", database file $(du -h "$file" | cut -f1)"
    fi
  fi
  if [ "$OVER" -gt 0 ]; then overload "$db" "$port" "$pid" "$work"; fi
  kill -TERM "$pid"; wait "$pid" || true
  t0=$(date +%s%3N)
  (cd "$work" && exec java $OPTS -XX:SharedArchiveFile="$work/runway.jsa" -Xlog:cds=off -jar "$JAR" \
    >>"$work/server.log" 2>&1) & pid=$!
  SERVER=$pid
  START[$db]=$(await_ready "$port" "$t0")
  kill -TERM "$pid"; wait "$pid" || true
  rm -rf "$work"
}

declare -A RSS START SOAKED OVERLOADED
bench_db h2 "jdbc:h2:file:/tmp/runway-bench-h2-$$/runway;AUTO_SERVER=TRUE" sa ""
rm -rf "/tmp/runway-bench-h2-$$"
if command -v psql >/dev/null && psql "postgresql://$PG_USER@127.0.0.1:5432/postgres" -qc 'select 1' >/dev/null 2>&1; then
  db="runway_bench_$$"
  psql "postgresql://$PG_USER@127.0.0.1:5432/postgres" -qc "CREATE DATABASE $db" >/dev/null
  bench_db postgresql "${PG_URL%/*}/$db" "$PG_USER" "$PG_PASSWORD"
  psql "postgresql://$PG_USER@127.0.0.1:5432/postgres" -qc "DROP DATABASE $db" >/dev/null
else
  echo "bench: PostgreSQL does not answer at $PG_URL: H2 only" >&2
fi

echo
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || true)
echo "Runway $(unzip -p "$JAR" META-INF/MANIFEST.MF 2>/dev/null | awk -F': ' '/Implementation-Version/ {print $2}' | tr -d '\r')${commit:+ ($commit)} on $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(java -version 2>&1 | head -1)"
echo "wrk -t2 -c$CONNS -d${SECS}s after ${WARM}s of warm-up; load generator on the same machine"
echo
printf '| %-10s | %-30s | %9s | %8s | %8s | %10s | %7s |\n' database endpoint "req/s" "p50 ms" "p99 ms" "vs healthz" "non-2xx"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' ------------ -------------------------------- ----------- ---------- ---------- ------------ ---------
declare -A HEALTH
for row in "${ROWS[@]}"; do IFS='|' read -r db ep rps p50 p99 errs <<<"$row"; [ "$ep" = "GET /healthz" ] && HEALTH[$db]=$rps; done
for row in "${ROWS[@]}"; do
  IFS='|' read -r db ep rps p50 p99 errs <<<"$row"
  ratio=$(awk -v a="$rps" -v b="${HEALTH[$db]}" 'BEGIN {printf "%.2f", a/b}')
  printf '| %-10s | %-30s | %9s | %8s | %8s | %10s | %7s |\n' "$db" "$ep" "$rps" "$p50" "$p99" "$ratio" "$errs"
done
echo
for db in "${!START[@]}"; do
  echo "$db: start-up to the first 200 on /readyz (existing database): ${START[$db]} ms; resident memory after ${SOAK}s of load: ${RSS[$db]:-not measured}${SOAKED[$db]:+ (${SOAKED[$db]})}"
  if [ -n "${OVERLOADED[$db]:-}" ]; then echo "$db: overload, ${OVER}s at $OVER_CONNS connections: ${OVERLOADED[$db]}"; fi
done
