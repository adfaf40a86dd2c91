"""The resource sampler: its text read back, counters turned into rates, the measured step
bracketed, and the loop itself run on this machine.

Expected values are computed by hand from the kernel's documented counters
(Documentation/admin-guide/iostats.rst: sectors of 512 bytes, milliseconds; proc(5): jiffies
of 1/CLK_TCK s; PSI totals in microseconds), or read from this machine by the test itself
(os.stat, /sys/dev/block)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from perfpost.instrument import rates, sampler


def sample(t: float, cpu: tuple, disk: tuple, rx: int, tx: int, psi: int, ticks: int) -> str:
    user, system, idle, iowait = cpu
    return "\n".join(
        [
            f"{sampler.SAMPLE_MARKER} {t}",
            "==> /proc/stat <==",
            f"cpu  {user} 0 {system} {idle} {iowait} 0 0 0 0 0",
            f"cpu0 {user // 2} 0 {system // 2} {idle // 2} {iowait // 2} 0 0 0 0 0",
            f"cpu1 {user - user // 2} 0 {system - system // 2} {idle - idle // 2} "
            f"{iowait - iowait // 2} 0 0 0 0 0",
            "intr 12345 0 0",
            f"ctxt {1000 + t * 100:.0f}",
            "procs_running 3",
            "procs_blocked 1",
            "",
            "==> /proc/meminfo <==",
            "MemTotal:        1000 kB",
            "MemFree:          100 kB",
            "MemAvailable:     400 kB",
            "Cached:           200 kB",
            "Dirty:             10 kB",
            "Writeback:          0 kB",
            "",
            "==> /proc/diskstats <==",
            "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
            "   8       0 sda " + " ".join(str(x) for x in disk) + " 0 0 0 0 0 0",
            "   8       1 sda1 " + " ".join(str(x) for x in disk) + " 0 0 0 0 0 0",
            "",
            "==> /proc/net/dev <==",
            "Inter-|   Receive                                                |  Transmit",
            " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets",
            "    lo:       0       0    0    0    0     0          0         0        0       0"
            "    0    0    0     0       0          0",
            f"  eth0: {rx}      10    0    0    0     0          0         0 {tx}      10    0"
            "    0    0     0       0          0",
            "",
            "==> /proc/pressure/cpu <==",
            f"some avg10=0.00 avg60=0.00 avg300=0.00 total={psi}",
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0",
            "",
            "==> /proc/42/stat <==",
            f"42 (java (x) y) S 1 42 42 0 -1 4194560 100 0 0 0 {ticks} 0 0 0 20 0 30 0 "
            "12345 999999 1000 18446744073709551615",
            "",
        ]
    )


HEADER = f"{sampler.HEADER_MARKER} schema=1 clk_tck=100 page=4096 interval=2\n"
# Two samples 2 s apart. CPU: +150 user, +30 system, +10 idle, +10 iowait jiffies (200 in
# all). sda: +100 reads, +2048 sectors read, +200 ms reading, +50 writes, +4096 sectors
# written, +300 ms writing, +1000 ms with I/O in flight, +3000 weighted ms. eth0: +4000 bytes
# received, +1000 sent. PSI cpu some: +500,000 us. pid 42: +100 jiffies of utime.
A = sample(
    100.0, (1000, 500, 8000, 100), (10, 0, 80, 5, 20, 0, 160, 30, 0, 40, 35), 1000, 2000, 0, 7
)
B = sample(
    102.0,
    (1150, 530, 8010, 110),
    (110, 0, 2128, 205, 70, 0, 4256, 330, 0, 1040, 3035),
    5000,
    3000,
    500_000,
    107,
)


def test_rates_over_an_interval_follow_the_kernels_counters():
    data = sampler.parse(HEADER + A + B)
    assert len(data.samples) == 2
    assert data.clk_tck == 100
    assert data.interval == 2.0
    got = {(p.resource, p.metric): p.value for p in rates.intervals(data, labels={42: "dn"})}
    assert got[("cpu", "busy")] == pytest.approx(180 / 200)
    assert got[("cpu", "user")] == pytest.approx(150 / 200)
    assert got[("cpu", "iowait")] == pytest.approx(10 / 200)
    assert got[("disk:sda", "read_bytes")] == pytest.approx(2048 * 512 / 2)
    assert got[("disk:sda", "write_bytes")] == pytest.approx(4096 * 512 / 2)
    assert got[("disk:sda", "reads")] == pytest.approx(50)
    assert got[("disk:sda", "writes")] == pytest.approx(25)
    assert got[("disk:sda", "util")] == pytest.approx(0.5)
    assert got[("disk:sda", "queue")] == pytest.approx(1.5)
    assert got[("disk:sda", "await")] == pytest.approx(0.5 / 150)
    assert got[("net:eth0", "rx_bytes")] == pytest.approx(2000)
    assert got[("net:eth0", "tx_bytes")] == pytest.approx(500)
    assert got[("pressure", "cpu_some")] == pytest.approx(0.25)
    assert got[("system", "context_switches")] == pytest.approx(100)
    assert got[("memory", "used")] == (1000 - 400) * 1024
    assert got[("process:dn", "cpu")] == pytest.approx(0.5)
    assert got[("process:dn", "rss")] == 1000 * 4096
    # A partition is its disk's I/O again, an idle loop device nothing to show, lo idle too.
    resources = {r for r, _ in got}
    assert "disk:sda1" not in resources
    assert "disk:loop0" not in resources
    assert "net:lo" not in resources


def test_a_sample_cut_short_is_dropped_not_read():
    text = HEADER + A + B
    cut = text[: text.index("==> /proc/diskstats <==", text.index(str(102.0)))]
    assert len(sampler.parse(cut).samples) == 1
    # A last line without its end is not read: the cut process line leaves no process.
    cut = sampler.parse(text.rstrip("\n")[:-3])
    assert len(cut.samples) == 2
    assert cut.samples[0].procs
    assert not cut.samples[1].procs


def test_the_window_brackets_the_step_and_counts_its_busy_time():
    # Three samples a second apart: CPU 95% busy in the first second, 50% in the second.
    def cpu(t: float, busy: int, total: int) -> str:
        return (
            f"{sampler.SAMPLE_MARKER} {t}\n==> /proc/stat <==\n"
            f"cpu  {busy} 0 0 {total - busy} 0 0 0 0 0 0\ncpu0 {busy} 0 0 {total - busy} 0 0 0 0\n"
            "==> /proc/meminfo <==\nMemTotal: 10 kB\nMemAvailable: 5 kB\n"
            "==> /proc/diskstats <==\n   8 0 sda 0 0 0 0 0 0 0 0 0 0 0\n"
        )

    text = HEADER + cpu(10.0, 0, 0) + cpu(11.0, 95, 100) + cpu(12.0, 145, 200)
    data = sampler.parse(text)
    w = rates.window(data, 10.0, 12.0)
    assert w["cpu"]["busy"] == pytest.approx(145 / 200)
    assert w["cpu"]["busy_time_share"] == pytest.approx(0.5)  # 1 s of 2 at >= 90%
    # A step inside the second interval only: that interval is all it had.
    w = rates.window(data, 11.2, 11.8)
    assert w["cpu"]["busy"] == pytest.approx(0.5)
    assert w["cpu"]["busy_time_share"] == 0.0


def test_partitions_belong_to_their_disks():
    names = ["sda", "sda1", "sda2", "nvme0n1", "nvme0n1p1", "mmcblk0", "mmcblk0p2", "loop0", "dm-0"]
    assert sampler.whole_disks(names) == {"sda", "nvme0n1", "mmcblk0", "loop0", "dm-0"}
    assert sampler.disk_of("nvme0n1p1", names) == "nvme0n1"
    assert sampler.disk_of("sda2", names) == "sda"
    assert sampler.disk_of("dm-0", names) == "dm-0"


def _sys_name(path: str) -> str | None:
    """The block device under ``path`` as /sys names it (DEVNAME in its uevent)."""
    dev = os.stat(path).st_dev
    uevent = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/uevent")
    if not uevent.exists():
        return None
    return next(
        (
            ln.split("=", 1)[1]
            for ln in uevent.read_text().splitlines()
            if ln.startswith("DEVNAME=")
        ),
        None,
    )


def test_the_loop_samples_this_machine_until_asked_to_stop(tmp_path):
    """The real loop: its first sample is out when the ready script returns, a USR1 gets one
    more at once (not after its sleep), and it leaves nothing behind."""
    state = str(tmp_path / "state")
    wanted = [str(tmp_path), "/dev/shm", str(tmp_path / "not" / "there yet")]
    proc = subprocess.Popen(
        ["sh", "-c", sampler.sampler_script(state, 5.0, [os.getpid()], wanted)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ready = subprocess.run(["sh", "-c", sampler.ready_script(state)], timeout=20)
        assert ready.returncode == 0
        time.sleep(0.3)
        asked = time.time()
        subprocess.run(["sh", "-c", sampler.stop_script(state)], check=True)
        out, _ = proc.communicate(timeout=10)
    finally:
        proc.kill()
    data = sampler.parse(out)
    assert len(data.samples) == 2  # the first, and the one USR1 asked for (interval 5 s)
    assert 0 <= data.samples[-1].t - asked < 1.0
    assert not Path(state).exists()
    assert data.clk_tck == os.sysconf("SC_CLK_TCK")
    # Each directory's device, as /sys names the device under it (a missing directory is
    # looked up by its nearest existing ancestor); /dev/shm is a tmpfs, no block device.
    assert data.device_of(str(tmp_path)) == _sys_name(str(tmp_path))
    assert data.device_of(wanted[2]) == _sys_name(str(tmp_path))
    assert data.device_of("/dev/shm") is None
    assert rates.cores(data) == os.cpu_count()
    assert os.getpid() in data.samples[0].procs
