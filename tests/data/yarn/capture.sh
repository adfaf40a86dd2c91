#!/usr/bin/env bash
# Re-captures the real teragen-on-YARN console logs and ResourceManager records the parser
# tests read: a single-node YARN 3.4.2 (perfpost yarn-single-node) and the provisioned Hadoop
# client submitting to it.
#   tests/data/yarn/capture.sh <path to the Hadoop client's bin/yarn>
set -u
yarn=${1:?usage: capture.sh BIN/YARN}
cd "$(dirname "$0")"
jar=$(ls "$(dirname "$yarn")"/../lib/hadoop-mapreduce-examples-*.jar)
t=$(mktemp -d /var/tmp/perfpost-yarn-capture-XXXXXX)
perfpost yarn-single-node "$t/yarn" > "$t/yarn.out" 2>&1 & cluster=$!
trap 'kill $cluster; wait $cluster; rm -rf "$t"' EXIT
for _ in $(seq 120); do [ -f "$t/yarn/cluster.json" ] && break; sleep 1; done
rm=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["resourcemanager"])' "$t/yarn/cluster.json")
export HADOOP_CONF_DIR=$t/yarn/client-conf
app() { curl -sS "$rm/ws/v1/cluster/apps/$1"; }
app_of() { sed -n 's/.*Submitted application \(application_[0-9_]*\).*/\1/p' "$1" | head -n 1; }
final() {  # the record once terminal with no container left (perfpost.tools.teragen.yarnapp)
  for _ in $(seq 60); do
    app "$1" > "$2"
    python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["app"]; sys.exit(0 if a["state"] in ("FINISHED","FAILED","KILLED") and a.get("runningContainers",0) <= 0 else 1)' "$2" && return
    sleep 1
  done
}

# Success, with a snapshot of the record while it runs.
"$yarn" jar "$jar" teragen -Dmapreduce.job.maps=2 1000000 "file://$t/out-ok" 2> yarn-success.log & p=$!
for _ in $(seq 60); do id=$(app_of yarn-success.log); [ -n "$id" ] && app "$id" | grep -q '"state":"RUNNING"' && break; sleep 0.5; done
app "$id" > app-running.json
wait $p; echo "success exit $?"
final "$id" app-succeeded.json

# Every map JVM fails to start: the job and the application fail.
"$yarn" jar "$jar" teragen -Dmapreduce.job.maps=1 -Dmapreduce.map.maxattempts=1 \
  -Dmapreduce.map.java.opts=-XX:+PerfpostNoSuchOption 1000 "file://$t/out-bad" 2> yarn-failed.log
echo "failed exit $?"
final "$(app_of yarn-failed.log)" app-failed.json

# Killed through the REST API while its maps run.
"$yarn" jar "$jar" teragen -Dmapreduce.job.maps=1 500000000 "file://$t/out-big" 2> yarn-killed.log & p=$!
for _ in $(seq 60); do id=$(app_of yarn-killed.log); [ -n "$id" ] && app "$id" | grep -q '"state":"RUNNING"' && break; sleep 0.5; done
sleep 5
curl -sS -X PUT -H 'Content-Type: application/json' -d '{"state":"KILLED"}' "$rm/ws/v1/cluster/apps/$id/state" > /dev/null
wait $p; echo "killed exit $?"
final "$id" app-killed.json

# An id the RM does not know.
app "${id%_*}_9999" > app-not-found.json
