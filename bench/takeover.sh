#!/usr/bin/env bash
# Takeover times of issue 36, as TakeoverIT measures them against the packaged jar: instance A holds
# TAKEOVER_RUNS agent runs whose model call hangs, as many workflow runs whose http step hangs and
# their run.started deliveries, then A is killed (kill -9), paused (kill -STOP for 30 s, default
# lease) or stopped (SIGTERM); and one H2 instance is killed and restarted in place. Each case runs
# TAKEOVER_ROUNDS times, each on a fresh database; prints every round's figures, counted from the
# fault (or from A's exit, or from the restart's readiness): until the taking instance held every
# run and delivery (held), and until every call was made again (seconds), then the median and worst
# of each per case.
#
#   mvn -B -q -DskipTests package   # this script builds nothing itself: it needs target/runway.jar
#   bench/takeover.sh               # about 10-20 minutes with the defaults (100 runs of each kind, 5 rounds)
#
# Note: it runs the IT through mvn verify, whose package phase lays the jar down again from the
# working tree: bench the commit you have checked out.
# Settings: TAKEOVER_RUNS (100), TAKEOVER_ROUNDS (5), RUNWAY_TEST_PG_URL
# (jdbc:postgresql://127.0.0.1:5432/test), RUNWAY_TEST_PG_USER (postgres), RUNWAY_TEST_PG_PASSWORD.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${TAKEOVER_RUNS:-100}
ROUNDS=${TAKEOVER_ROUNDS:-5}
[ -f target/runway.jar ] || { echo "bench: target/runway.jar is missing: mvn -B -q -DskipTests package" >&2; exit 2; }

export RUNWAY_TEST_PG_URL=${RUNWAY_TEST_PG_URL:-jdbc:postgresql://127.0.0.1:5432/test}
export RUNWAY_TEST_PG_USER=${RUNWAY_TEST_PG_USER:-postgres}
export RUNWAY_TEST_PG_REQUIRED=true
LOG=$(mktemp /tmp/runway-takeover-XXXX.log)
echo "bench: $RUNS runs of each kind, $ROUNDS rounds per case; mvn output in $LOG"

status=0
mvn -B verify -Dtest=NONE -Dsurefire.failIfNoSpecifiedTests=false -Dit.test=TakeoverIT \
  -Dtakeover.runs="$RUNS" -Dtakeover.rounds="$ROUNDS" -Dtakeover.defaults=true >"$LOG" 2>&1 || status=$?

# The lines are on mvn's output; a failsafe set to write test output to files keeps them in its reports.
LINES=$(grep -ah '^TAKEOVER ' "$LOG" || true)
if [ -z "$LINES" ]; then
  LINES=$(cat target/failsafe-reports/*TakeoverIT*-output.txt 2>/dev/null | grep -ah '^TAKEOVER ' || true)
fi
LINES=$(printf '%s\n' "$LINES" | sort -u)
printf '%s\n' "$LINES"
echo
printf '%s\n' "$LINES" | python3 -c '
import math, statistics, sys
cases = {}
for line in sys.stdin:
    parts = line.split()
    if len(parts) < 4 or parts[0] != "TAKEOVER":
        continue
    fields = dict(p.split("=", 1) for p in parts[2:])
    cases.setdefault(parts[1], []).append((float(fields.get("held", "nan")), float(fields["seconds"])))
def figure(values, f):
    done = [v for v in values if not math.isnan(v)]
    return ("%.2f s" % f(done) if done else "-"), len(values) - len(done)
print("%-11s %6s %12s %11s %12s %11s  %s" % ("case", "rounds", "held median", "held worst", "calls median",
    "calls worst", "incomplete rounds"))
for case, figures in sorted(cases.items()):
    held = [h for h, _ in figures]
    calls = [c for _, c in figures]
    print("%-11s %6d %12s %11s %12s %11s  %d" % (case, len(figures), figure(held, statistics.median)[0],
        figure(held, max)[0], figure(calls, statistics.median)[0], figure(calls, max)[0], figure(calls, max)[1]))
'
grep -a "Tests run:.*TakeoverIT\|FAIL\|AssertionFailedError\|AssertionError" "$LOG" | head -20 || true
[ "$status" -eq 0 ] || echo "bench: mvn verify failed (exit $status); the figures above are those measured; see $LOG" >&2
exit "$status"
