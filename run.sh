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
# JVM options: RUNWAY_JAVA_OPTS, else config/jvm.options (comment lines skipped).
opts=${RUNWAY_JAVA_OPTS-$(grep -v '^#' config/jvm.options 2>/dev/null | tr '\n' ' ')}
exec java $opts -jar "$jar" "$@"
