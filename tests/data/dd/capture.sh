#!/usr/bin/env bash
# Re-captures the real dd logs the parser tests read. Each file is dd's own stderr from the
# command next to it; run on Debian 12 (coreutils 9.1). busybox.log needs `apt-get install busybox`.
set -u
cd "$(dirname "$0")"
t=$(mktemp -d /var/tmp/perfpost-capture-XXXXXX)
trap 'rm -rf "$t"' EXIT
export LC_ALL=C
dd if=/dev/zero of="$t/f" bs=10k count=10000 conv=fsync 2> write-fsync.log
dd if=/dev/zero of="$t/g" bs=1M count=64 oflag=direct 2> write-direct.log
dd if="$t/f" of=/dev/null bs=4k 2> read.log
dd if=/dev/zero of=/dev/null bs=1 count=1 2> one-byte.log
dd if=/dev/zero of=/dev/null bs=1 count=0 2> zero-bytes.log
dd if=/dev/zero of=/dev/null bs=1M count=120000 status=progress 2> progress.log
dd if="$t/missing" of=/dev/null 2> failed-open.log
dd if=/dev/zero of=/dev/full bs=1k count=4 2> failed-nospace.log
head -c 3000 /dev/zero | dd of=/dev/null bs=1024 2> partial-records.log
# A log cut off mid-run: dd killed before it could print its summary.
dd if=/dev/zero of=/dev/null bs=1M count=100000000 status=progress 2> killed.log & p=$!
sleep 1.5; kill -KILL $p; wait $p 2>/dev/null
head -n 2 write-fsync.log > truncated.log
if command -v busybox >/dev/null; then
  busybox dd if=/dev/zero of="$t/b" bs=10240 count=1000 conv=fsync 2> busybox.log
fi
if locale -a 2>/dev/null | grep -qi '^de_DE.utf8$'; then
  LC_ALL=de_DE.UTF-8 dd if=/dev/zero of=/dev/null bs=10k count=10000 2> locale-de.log
fi
