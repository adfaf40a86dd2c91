#!/usr/bin/env bash
# Re-captures the real freon/vapor logs the parser tests read, with a provisioned Ozone 2.2.0:
#   tests/data/freon/capture.sh <path to bin/ozone>
# Each .log is the tool's stderr (log4j), each .tty.log the whole terminal output of a run
# under a pseudo-terminal (script(1)), which is the form freon prints to a person.
set -u
ozone=${1:?usage: capture.sh BIN/OZONE}
cd "$(dirname "$0")"
t=$(mktemp -d /var/tmp/perfpost-freon-capture-XXXXXX)
trap 'rm -rf "$t"' EXIT
dn=(-D "hdds.datanode.dir=$t/dn" -D "ozone.metadata.dirs=$t/meta"
    -D hdds.datanode.volume.min.free.space=1MB -D hdds.datanode.volume.min.free.space.percent=0
    -D hdds.datanode.volume.min.free.space.hard.limit.percent=0)
schema=(-D hdds.datanode.container.schema.v3.enabled=false)

"$ozone" vapor "${dn[@]}" "${schema[@]}" cmdw -n 20000 -s 1024 -t 2 -l FILE_PER_CHUNK \
  2> cmdw-perchunk.log; echo "cmdw-perchunk exit $?"
"$ozone" freon dfsg --path "file://$t/fs" -n 300 -s 10240 -t 2 2> dfsg.log
echo "dfsg exit $?"
"$ozone" freon dfsg --path "file://$t/fs2" -n 100 -s 10240 -t 2 --copy-buffer=1 \
  2> dfsg-copybuffer1.log; echo "dfsg copy-buffer exit $?"
# Without the schema v3 flag cmdw fails on this layout: a real failure with a stack trace.
"$ozone" vapor "${dn[@]}" cmdw -n 100 -s 1024 -t 1 -l FILE_PER_BLOCK 2> cmdw-failed.log
echo "cmdw-failed exit $?"
# The pattern older clusters used: date without milliseconds, class and line number.
mkdir -p "$t/oldconf"
sed 's/^log4j.appender.stderr.layout.ConversionPattern=.*/log4j.appender.stderr.layout.ConversionPattern=%d{yyyy-MM-dd HH:mm:ss} %-5p %c{1}:%L - %m%n/' \
  "$(dirname "$ozone")/../conf/log4j.properties" > "$t/oldconf/log4j.properties"
java -Xmx256m -cp "$t/oldconf:$(dirname "$ozone")/../lib/*" org.apache.hadoop.ozone.freon.Vapor \
  "${dn[@]}" "${schema[@]}" cmdw -n 2000 -s 10240 -t 2 -l FILE_PER_BLOCK 2> cmdw-oldpattern.log
echo "cmdw-oldpattern exit $?"
# On a terminal: progress bar redrawn with \r, a "-- Timers --" block, bare summary lines.
script -qec "$ozone vapor ${dn[*]} ${schema[*]} cmdw -n 30000 -s 1024 -t 2 -l FILE_PER_BLOCK" \
  /dev/null > cmdw.tty.log; echo "cmdw tty exit $?"
# A --duration run: progress counts seconds ("1 out of 4"), the run stops at its deadline.
"$ozone" vapor "${dn[@]}" "${schema[@]}" cmdw -n 100000000 -s 1048576 -t 2 -l FILE_PER_CHUNK \
  --duration=4s 2> cmdw-duration.log; echo "cmdw-duration exit $?"
# cmdw-duration-no-operation.log is a real run's log kept from six hosts sharing two cores
# (tests/test_lab_onefile_e2e.py with --duration=2s): its set-up outlasted the duration, and
# freon exited 0 with "Successful executions: 0".
# Cut off mid-run: killed before its summary.
"$ozone" vapor "${dn[@]}" "${schema[@]}" cmdw -n 100000000 -s 1024 -t 2 -l FILE_PER_CHUNK \
  2> cmdw-killed.log & p=$!
sleep 6; kill -KILL $p; wait $p 2>/dev/null; echo "killed"
# cmdw never finishes a block, so FILE_PER_BLOCK keeps every block's file open to the end of
# the run: under an open-file limit of 512 it fails after about 512 - the JVM's own files, x 16.
(ulimit -n 512; "$ozone" vapor "${dn[@]}" "${schema[@]}" cmdw -n 20000 -s 1024 -t 2 \
  -l FILE_PER_BLOCK 2> cmdw-nofile.log); echo "cmdw-nofile exit $?"
# A task that fails: ERROR with a stack trace, "One or more freon test is failed.", exit 255.
(cd / && "$ozone" freon dfsg --path file:///proc/perfpost-nope -n 20 -s 1024 -t 1 \
  2> "$OLDPWD/dfsg-failed.log"); echo "dfsg-failed exit $?"
# cmdw-unresolved-hostname.log was captured by the workflow on a testbed host whose own name
# did not resolve: Hadoop logs an ERROR, and the run still succeeds.
