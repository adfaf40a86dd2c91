#!/usr/bin/env bash
# Re-captures the real teragen logs the parser tests read, with a provisioned Hadoop 3.4.2:
#   tests/data/teragen/capture.sh <path to bin/yarn>
set -u
yarn=${1:?usage: capture.sh BIN/YARN}
cd "$(dirname "$0")"
jar=$(ls "$(dirname "$yarn")"/../lib/hadoop-mapreduce-examples-*.jar)
t=$(mktemp -d /var/tmp/perfpost-teragen-capture-XXXXXX)
trap 'rm -rf "$t"' EXIT
local=(-Dmapreduce.framework.name=local -Dfs.defaultFS=file:/// "-Dhadoop.tmp.dir=$t/tmp"
       "-Dmapreduce.jobtracker.staging.root.dir=$t/tmp/staging")
"$yarn" jar "$jar" teragen "${local[@]}" 1000000 "file://$t/out" 2> local-100MB.log
echo "local exit $?"
# The same output again: FileAlreadyExistsException, exit 255.
"$yarn" jar "$jar" teragen "${local[@]}" 1000 "file://$t/out" 2> output-exists.log
echo "exists exit $?"
# Cut off mid-run: killed before the job's counters.
"$yarn" jar "$jar" teragen "${local[@]}" 500000000 "file://$t/big" 2> killed.log & p=$!
sleep 6; kill -KILL $p; wait $p 2>/dev/null; echo killed
