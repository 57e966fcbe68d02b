#!/usr/bin/env bash
# What the metrics cost: the same jar twice, side by side, RUNWAY_METRICS_ENABLED=true and =false,
# each on a fresh database of its own, both warmed up, then measured in alternating rounds (one
# server loaded at a time) of start-run (POST /v1/workflows/{id}/runs), GET /v1/runs/{id} and
# GET /healthz; prints every round and the medians, of throughput and of the server's CPU time per
# request (user and system, from /proc: on a machine shared with other work it varies far less than
# throughput does). A scrape of /metrics every 5 s runs against the server with metrics on during its
# rounds, as Prometheus would.
#
#   mvn -B -q -DskipTests package      # target/runway.jar
#   bench/metrics.sh                   # needs wrk; about 4 minutes with the defaults
#
# Settings: BENCH_DB (h2, or postgresql: a fresh database each on 127.0.0.1:5432, user BENCH_PG_USER,
# postgres), BENCH_ROUNDS (5), BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (20), BENCH_CONNECTIONS (32).
# The servers run with config/jvm.options, the per-key rate limit off and the request log off, as
# in bench/run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JAR=$ROOT/target/runway.jar
DB=${BENCH_DB:-h2}
ROUNDS=${BENCH_ROUNDS:-5}
SECS=${BENCH_SECONDS:-10}
WARM=${BENCH_WARMUP_SECONDS:-20}
CONNS=${BENCH_CONNECTIONS:-32}
PG_USER=${BENCH_PG_USER:-postgres}
OPTS=$(grep -v '^#' config/jvm.options | tr '\n' ' ')
export MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-2}

command -v wrk >/dev/null || { echo "bench: wrk is missing (Debian: apt-get install wrk)" >&2; exit 2; }
[ -f "$JAR" ] || { echo "bench: no $JAR; run mvn -B -DskipTests package first" >&2; exit 2; }

WORK=$(mktemp -d /tmp/runway-metrics-bench-XXXX)
PIDS=()
DATABASES=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  for db in "${DATABASES[@]}"; do psql "postgresql://$PG_USER@127.0.0.1:5432/postgres" -qc "DROP DATABASE $db" >/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rps() { awk '/Requests\/sec/ {printf "%.0f", $2}'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

declare -A PORT KEY RUN PID
start() {  # mode (on|off)
  local mode=$1 dir=$WORK/$1 url port key
  mkdir -p "$dir"
  if [ "$DB" = postgresql ]; then
    local name="runway_metrics_bench_${mode}_$$"
    psql "postgresql://$PG_USER@127.0.0.1:5432/postgres" -qc "CREATE DATABASE $name" >/dev/null
    DATABASES+=("$name")
    url="jdbc:postgresql://127.0.0.1:5432/$name"
  else
    url="jdbc:h2:file:$dir/runway;AUTO_SERVER=TRUE"
  fi
  port=$(free_port)
  key=$(cd "$dir" && env RUNWAY_DB_URL="$url" RUNWAY_DB_USER="$([ "$DB" = postgresql ] && echo "$PG_USER" || echo sa)" \
    java -jar "$JAR" keys create --workspace default --name bench 2>/dev/null)
  (cd "$dir" && exec env RUNWAY_HTTP_PORT="$port" RUNWAY_DB_URL="$url" \
    RUNWAY_DB_USER="$([ "$DB" = postgresql ] && echo "$PG_USER" || echo sa)" \
    RUNWAY_WORKFLOWS_DIR="$ROOT/config/workflows" RUNWAY_HTTP_REQUEST_LOG=false \
    RUNWAY_RATELIMIT_PER_KEY_PER_SECOND=0 RUNWAY_QUOTAS_RUNS_PER_MINUTE_PER_WORKSPACE=0 RUNWAY_BOOTSTRAP_ADMIN_KEY=false RUNWAY_HTTP_MAX_IN_FLIGHT_PER_KEY=100000 \
    RUNWAY_METRICS_ENABLED=$([ "$mode" = on ] && echo true || echo false) \
    java $OPTS -jar "$JAR" >"$dir/server.log" 2>&1) &
  PIDS+=($!)
  PID[$mode]=$!
  for _ in $(seq 1 600); do curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && break; sleep 0.05; done
  PORT[$mode]=$port
  KEY[$mode]=$key
  RUN[$mode]=$(curl -s -X POST "http://127.0.0.1:$port/v1/workflows/hello/runs" -H "Authorization: Bearer $key" \
    -H 'Content-Type: application/json' -d '{"project":"bench"}' | python3 -c 'import sys,json; print(json.load(sys.stdin)["id"])')
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # user + system, in clock ticks
load() {  # mode what seconds -> prints "req/s cpu-us-per-request"
  local mode=$1 what=$2 secs=$3 scraper= out t0 t1
  export RUNWAY_BENCH_KEY=${KEY[$mode]} RUNWAY_BENCH_RUN=${RUN[$mode]}
  if [ "$mode" = on ]; then
    (while true; do curl -s -o /dev/null "http://127.0.0.1:${PORT[on]}/metrics"; sleep 5; done) & scraper=$!
  fi
  t0=$(cpu_ticks "${PID[$mode]}")
  case $what in
    post) out=$(wrk -t2 -c"$CONNS" -d"${secs}s" -s bench/post.lua "http://127.0.0.1:${PORT[$mode]}/v1/workflows/hello/runs") ;;
    get) out=$(wrk -t2 -c"$CONNS" -d"${secs}s" -s bench/get.lua "http://127.0.0.1:${PORT[$mode]}/") ;;
    healthz) out=$(wrk -t2 -c"$CONNS" -d"${secs}s" "http://127.0.0.1:${PORT[$mode]}/healthz") ;;
  esac
  t1=$(cpu_ticks "${PID[$mode]}")
  if [ -n "$scraper" ]; then kill "$scraper"; wait "$scraper" 2>/dev/null || true; fi
  echo "$(echo "$out" | rps) $(echo "$out" | awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
    '/requests in/ {printf "%.0f", t * 1e6 / hz / $1}')"
}

start on
start off
echo "bench: $DB: warming up both servers (${WARM}s of each load each)" >&2
for mode in on off; do
  for what in post get healthz; do load "$mode" "$what" "$WARM" >/dev/null; done
done

declare -A FIG CPU
for what in post get healthz; do FIG[$what,on]=""; FIG[$what,off]=""; CPU[$what,on]=""; CPU[$what,off]=""; done
for round in $(seq 1 "$ROUNDS"); do
  # Alternate which goes first, so neither always follows the other's load.
  order="on off"; [ $((round % 2)) -eq 0 ] && order="off on"
  for what in post get healthz; do
    for mode in $order; do
      read -r r c < <(load "$mode" "$what" "$SECS")
      FIG[$what,$mode]+=" $r"
      CPU[$what,$mode]+=" $c"
      echo "bench: round $round $what metrics $mode: $r/s, $c us of CPU per request" >&2
    done
  done
done

echo
echo "Runway $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || true), $DB, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "wrk -t2 -c$CONNS -d${SECS}s per round, $ROUNDS alternating rounds after ${WARM}s of warm-up each"
echo
# The medians' ratio, and the median of each round's ratio: the two servers of a round ran one
# right after the other, so a round's ratio is spared the machine's slower swings.
row() {  # label on-figures off-figures
  local on off pairs
  on=$(echo "$2" | median); off=$(echo "$3" | median)
  pairs=$(paste <(echo "$2" | tr ' ' '\n' | grep -v '^$') <(echo "$3" | tr ' ' '\n' | grep -v '^$') \
    | awk '{printf "%d ", ($1 / $2 - 1) * 1000}' | median)
  printf '| %s |%s | %s |%s | %s | %s | %s |\n' "$1" "$(echo "$2" | sed 's/ /, /g; s/^,//')" "$on" \
    "$(echo "$3" | sed 's/ /, /g; s/^,//')" "$off" "$(awk -v a="$on" -v b="$off" 'BEGIN {printf "%+.1f%%", (a/b-1)*100}')" \
    "$(awk -v p="$pairs" 'BEGIN {printf "%+.1f%%", p / 10}')"
}
echo "| | metrics on, each round | median | metrics off, each round | median | on vs off, medians | on vs off, median of rounds |"
echo "|---|---|---|---|---|---|---|"
for what in post get healthz; do
  label=$(case $what in post) echo "POST /v1/workflows/{id}/runs";; get) echo "GET /v1/runs/{id}";; healthz) echo "GET /healthz";; esac)
  row "$label, req/s" "${FIG[$what,on]}" "${FIG[$what,off]}"
  row "$label, CPU us/request" "${CPU[$what,on]}" "${CPU[$what,off]}"
done
