#!/usr/bin/env bash
# Re-captures the real fio outputs the parser tests read. Each .log is what perfpost keeps of a
# run: fio's stdout (the JSON report) and stderr in one file, from the command next to it.
# Run on Debian 12 (fio 3.33, ext4 on a virtio disk, 2 cores).
set -u
cd "$(dirname "$0")"
t=$(mktemp -d /var/tmp/perfpost-capture-XXXXXX)
trap 'rm -rf "$t"' EXIT
export LC_ALL=C
common=(--output-format=json --directory="$t" --size=16M --bs=4k --runtime=1 --time_based)
fio "${common[@]}" --name=randread --rw=randread --ioengine=libaio --direct=1 --iodepth=16 \
  > randread.log 2>&1
fio "${common[@]}" --name=randwrite --rw=randwrite --ioengine=psync --direct=1 --fsync=16 \
  > randwrite.log 2>&1
# Two jobs, reported one by one (their latency percentiles cannot be merged)...
fio "${common[@]}" --name=randrw --rw=randrw --rwmixread=70 --ioengine=libaio --direct=1 \
  --iodepth=4 --numjobs=2 > randrw-2jobs.log 2>&1
# ...and merged by fio itself.
fio "${common[@]}" --name=randrw --rw=randrw --rwmixread=70 --ioengine=libaio --direct=1 \
  --iodepth=4 --numjobs=2 --group_reporting > randrw-grouped.log 2>&1
# Failures: a directory that does not exist (no report at all), an engine fio does not have,
# and a job whose writes fail (a report with the job's error number).
fio --output-format=json --name=nodir --directory="$t/missing" --size=1M --rw=randread \
  > failed-nodir.log 2>&1
fio --output-format=json --name=engine --directory="$t" --size=1M --rw=randread \
  --ioengine=nosuchengine > failed-engine.log 2>&1
fio --output-format=json --name=full --filename=/dev/full --size=1M --rw=write --bs=4k \
  > failed-enospc.log 2>&1
# A report cut off mid-way, as a killed fio or a truncated copy leaves it.
head -c 2000 randread.log > cut.log
