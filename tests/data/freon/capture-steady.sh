#!/usr/bin/env bash
# How the rate series the steady-state tests read were captured (2026-11-23, on the 2-core
# test machine other jobs shared, Ozone 2.2.0 provisioned by perfpost, ext4 on a virtual disk):
#   tests/data/freon/capture-steady.sh <path to bin/ozone>
# Each log is freon's stderr (log4j, a Progress line every second).
#
# dfsg-warmup.log: 4 MB files to file:// with 2 threads, run right after a 45 s run of the same
# command (--duration=45s, 15 GB written, then removed). The first 8 s ran at ~110 files/s,
# the next 7 at ~65, the rest at ~55. The peak is real but was not reproducible: the same
# command after `sync` (and after a 15 GB dd write, removed) started low and rose instead.
#
# dfsg-step.log, dfsg-step-late.log: the same command; STEP s in, the JVM is stopped 75 ms of
# every 100 ms (SIGSTOP/SIGCONT) until it ends, so its rate falls to about a third. The
# moment the throttle began is in the .throttle file this writes (05:36:05.91 with STEP=30 and
# 05:37:57.13 with STEP=40, N=4700). A competing `dd oflag=direct` did not slow freon here
# (the disk takes 900 MB/s); two `sha256sum /dev/zero` did, but the other jobs' load moved
# the rate as much.
set -u
ozone=${1:?usage: capture-steady.sh BIN/OZONE}
cd "$(dirname "$0")"
t=$(mktemp -d /var/tmp/perfpost-steady-XXXXXX)
dfsg=(freon dfsg -s 4MB --copy-buffer=1048576 --buffer=1048576 -t 2)

"$ozone" "${dfsg[@]}" --path "file://$t/big" -n 100000000 --duration=45s 2> /dev/null
rm -rf "$t/big"
"$ozone" "${dfsg[@]}" --path "file://$t/warm" -n 4000 2> dfsg-warmup.log
rm -rf "$t/warm"

step() {  # step LOG SECONDS FILES
  sync
  "$ozone" "${dfsg[@]}" --path "file://$t/$1" -n "$3" 2> "$1" &
  local f=$!
  sleep "$2"
  date +%T.%N > "$1.throttle"
  python3 - "$f" <<'PY'
import os, signal, sys, time
pid = int(sys.argv[1])
try:
    while True:
        os.kill(pid, signal.SIGSTOP); time.sleep(0.075)
        os.kill(pid, signal.SIGCONT); time.sleep(0.025)
except ProcessLookupError:
    pass
PY
  wait "$f"; rm -rf "${t:?}/$1"
}
step dfsg-step.log 30 4000
step dfsg-step-late.log 40 4700
rm -rf "$t"
