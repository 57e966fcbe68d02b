#!/usr/bin/env bash
# Builds target/runway.jar when it is missing or older than the sources, then runs it.
#   ./run.sh                 start the server (embedded H2 database under data/, port 8080)
#   ./run.sh keys ...        manage API keys (./run.sh keys --help)
set -euo pipefail
cd "$(dirname "$0")"

jar=target/runway.jar
if [ ! -f "$jar" ] || [ -n "$(find pom.xml src config -newer "$jar" -print -quit)" ]; then
  echo "runway: building $jar ..." >&2
  mvn -B -q -DskipTests package >&2
fi
# glibc gives each thread that allocates natively an arena of its own; two are plenty and keep the
# resident memory about 30 MB lower under load.
export MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-2}
# JVM options: RUNWAY_JAVA_OPTS, else config/jvm.options (comment lines skipped).
opts=${RUNWAY_JAVA_OPTS-$(grep -v '^#' config/jvm.options 2>/dev/null | tr '\n' ' ')}
# Class-data sharing: the first server run after a build records the classes it loaded when it
# exits, later runs map them in and start about a third faster.
if [ $# -eq 0 ] || [ "$1" = serve ]; then
  cds=target/runway.jsa
  if [ -f "$cds" ] && [ "$cds" -nt "$jar" ]; then
    opts="$opts -XX:SharedArchiveFile=$cds -Xlog:cds=off -Xlog:cds+dynamic=off"
  else
    opts="$opts -XX:ArchiveClassesAtExit=$cds -Xlog:cds=off -Xlog:cds+dynamic=off"
  fi
fi
exec java $opts -jar "$jar" "$@"
