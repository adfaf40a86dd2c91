"""The env step's disk probe (perfpost.run.diskprobe): its lines read back, and the real
script on this machine against lsblk's own answer for the directory's disk."""

import os
import subprocess

from perfpost.run import diskprobe


def test_probe_lines_read_back():
    out = (
        "noise\n"
        "@perfpost-sync-probe vda 64 0.0289303 /var/tmp/perfpost\n"
        "@perfpost-sync-probe sdb - - /srv/a dir with spaces\n"
    )
    ok, refused = diskprobe.parse(out)
    assert ok["disk"] == "vda"
    assert ok["dir"] == "/var/tmp/perfpost"
    assert ok["writes"] == 64
    assert ok["per_write"] == 0.0289303 / 64
    assert refused == {
        "disk": "sdb",
        "dir": "/srv/a dir with spaces",
        "writes": None,
        "seconds": None,
        "per_write": None,
    }


def _lsblk(*args: str) -> str:
    return subprocess.run(["lsblk", "-ndo", *args], capture_output=True, text=True).stdout.strip()


def test_the_probe_times_the_spinning_disk_under_a_directory_and_leaves_nothing(tmp_path):
    # A path that no longer exists (a cell's scratch, removed) is probed at the first
    # directory above it; memory (/dev/shm) is never probed; each disk once.
    gone = tmp_path / "cell" / "scratch"
    script = diskprobe.script([str(gone), "/dev/shm/perfpost", str(tmp_path)])
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    found = diskprobe.parse(out.stdout)
    # What lsblk says of tmp_path's device, asked here directly.
    source = subprocess.run(
        ["df", "--output=source", str(tmp_path)], capture_output=True, text=True
    ).stdout.split()[-1]
    disk = _lsblk("PKNAME", source) or _lsblk("NAME", source)
    spinning = disk and _lsblk("ROTA", f"/dev/{disk}") == "1"
    whole = disk and _lsblk("TYPE", f"/dev/{disk}") == "disk"
    if spinning and whole:
        (p,) = found
        assert (p["disk"], p["dir"], p["writes"]) == (disk, str(tmp_path), 64)
        assert 0 < p["seconds"] < 60
    else:
        assert found == []
    assert os.listdir(tmp_path) == []


def test_the_directories_probed_are_the_runs_own_on_that_host(tmp_path):
    # The window's dir: rows: this host's own, on a device, each once, in order.
    window = tmp_path / "resources-window.csv"
    window.write_text(
        "cell,host,repeat,node,resource,metric,value,unit,detail\n"
        "a,h1,1,h1,dir:/var/tmp/perfpost,device,0,,vda\n"
        "a,h1,2,h1,dir:/var/tmp/perfpost,device,0,,vda\n"
        "a,h1,1,h1,dir:/dev/shm/perfpost,device,0,,\n"
        "b,h1,1,h2,dir:/data/x,device,0,,sdb\n"
        "b,h1,1,h1,cpu,busy,0.5,,\n"
        "c,h1,1,h1,dir:/srv/ratis log,device,0,,sdc1\n"
    )
    assert diskprobe.data_dirs(str(window), "h1") == ["/var/tmp/perfpost", "/srv/ratis log"]
    assert diskprobe.data_dirs(str(window), "h2") == ["/data/x"]
    assert diskprobe.data_dirs(str(tmp_path / "none.csv"), "h1") == []
