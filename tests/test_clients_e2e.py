"""Four freon JVMs in one run against a real single-host Ozone (clients: 4): omkg creating keys
in the Ozone Manager, as the OM posts summed "30 freon JVMs" into one rate.

The same Ozone serves config/examples/strace-freon.yaml (freon ockg under strace -f -c, 1 and
4 threads): each count is checked against strace's own table, read here by its columns. Its
S3 gateway (roles: s3g) serves config/examples/s3-freon.yaml (freon s3kg): every object freon
counted is a PUT the gateway's own request log answered with 200.

Expected values come from the four freon logs themselves, read here with this file's own
regular expressions: each client's progress lines (millisecond stamps, operations completed),
the window all four were measuring (the latest first progress line inside a client's run to
the earliest last one), each client's count at its ends on the line between the two progress
lines around it (numpy.interp), and the sum of the four rates over it.
"""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT
from tests.e2e import QUICK_DAEMONS, make_checkout, records, snakemake
from tests.test_clusters_e2e import (
    OZONE_VERSION,
    RUN_TIMEOUT,
    cluster_dir,  # noqa: F401  (a fixture: kills whatever this test's clusters left)
)

pytestmark = pytest.mark.e2e

CLIENTS = 4
# Keys each omkg client creates: enough that every JVM still creates them once all four are
# up (their start-up takes seconds each on two busy cores). Measured with this file alone:
# with 2,500 each, the clients' first keys came 3.7 s apart and the common window was 17 s;
# with 1,500, 0.7 s apart and 15 s (at two thirds of the rate), a window still several times
# the skew, and 14 CPU-seconds less of the file's 134 (the Ozone Manager's 4,000 fewer keys).
KEYS = 1500
STRACE_KEYS = 50
S3_OBJECTS = 40
_PROGRESS = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*Progress: [\d.]+ % \((\d+) out of (\d+)\)"
)
_PREFIX = re.compile(r"Executing test with prefix (\S+)")


def progress(text: str) -> list[tuple[float, int]]:
    """(seconds, completed) of the progress lines inside the run: 0 < completed < total."""
    out = []
    for line in text.splitlines():
        m = _PROGRESS.match(line)
        if m and 0 < int(m.group(2)) < int(m.group(3)):
            at = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            out.append((at, int(m.group(2))))
    return out


@pytest.fixture(scope="module")
def run(ozone_cache, tmp_path_factory):
    cache, _ = ozone_cache
    work = tmp_path_factory.mktemp("clients")
    clusters_at = work / "clusters"
    config = {
        "tools": {"ozone": {"version": OZONE_VERSION, "cache": str(cache)}},
        "clusters": {
            "oz": {
                "kind": "ozone",
                "dir": str(clusters_at),
                "jvm": QUICK_DAEMONS,
                "buckets": ["vol1/bucket1", "s3v/bucket1"],
                "roles": {"s3g": "localhost"},
            }
        },
        "experiments": {
            "omkg": {
                "title": "Keys created in the Ozone Manager by four freon JVMs at once",
                "tool": "freon",
                "cluster": "oz",
                "params": {
                    "subcommand": "omkg",
                    "dir": str(work / "scratch"),
                    "clients": CLIENTS,
                    "options": {"n": KEYS, "t": 2, "v": "vol1", "b": "bucket1"},
                },
                "repeats": 1,
            }
        },
    }
    example = yaml.safe_load((ROOT / "config" / "examples" / "strace-freon.yaml").read_text())
    strace = example["experiments"]["strace-ockg"]
    strace.update(cluster="oz", repeats=1)
    strace["params"]["dir"] = str(work / "scratch")
    strace["params"]["run"] = strace["params"]["run"].replace("-n 200", f"-n {STRACE_KEYS}")
    config["experiments"]["strace-ockg"] = strace
    s3 = yaml.safe_load((ROOT / "config" / "examples" / "s3-freon.yaml").read_text())
    s3kg = s3["experiments"]["s3kg"]
    s3kg.update(cluster="oz", repeats=1)
    s3kg["params"]["dir"] = str(work / "scratch")
    s3kg["params"]["options"]["n"] = S3_OBJECTS
    config["experiments"]["s3kg"] = s3kg
    make_checkout(work, config)
    result = snakemake(work, "--cores", "2", "report", timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return work


def test_four_jvms_started_together_each_with_its_own_log(run):
    (rec,) = records(run, "omkg")
    assert rec["status"] == "done", rec["reason"]
    each = rec["clients"]["each"]
    assert len(each) == CLIENTS
    raw = rec["path"].parent / "raw"
    prefixes = set()
    for i, c in enumerate(each, start=1):
        text = (raw / f"client-{i}.freon.log").read_text()
        (prefix,) = _PREFIX.findall(text)  # one freon run in each log
        prefixes.add(prefix)
        assert f"Successful executions: {KEYS}" in text
        assert c["workdir"].endswith(f"-c{i}")
    assert len(prefixes) == CLIENTS  # four JVMs, not one log copied
    starts = [c["start_epoch"] for c in each]
    assert max(starts) - min(starts) < 1.0
    # Each JVM's first log line is after its start and before the run's end.
    for i, c in enumerate(each, start=1):
        lines = (raw / f"client-{i}.freon.log").read_text().splitlines()
        first = next(ln for ln in lines if re.match(r"\d{4}-\d\d-\d\d ", ln))[:23]
        at = dt.datetime.strptime(first, "%Y-%m-%d %H:%M:%S,%f").timestamp()
        assert c["start_epoch"] - 1 < at < rec["end_epoch"]


def test_the_rate_is_the_four_logs_sum_over_their_common_window(run):
    (rec,) = records(run, "omkg")
    raw = rec["path"].parent / "raw"
    points = [progress((raw / f"client-{i}.freon.log").read_text()) for i in range(1, 5)]
    assert all(len(p) >= 2 for p in points), "every client printed progress inside its run"
    start = max(p[0][0] for p in points)
    end = min(p[-1][0] for p in points)
    assert end > start, "the four were measuring at once"
    rates = []
    for p in points:
        t, c = np.array([x for x, _ in p]), np.array([y for _, y in p], dtype=float)
        rates.append((np.interp(end, t, c) - np.interp(start, t, c)) / (end - start))
    tidy = pd.read_csv(run / "results" / "omkg" / "tidy.csv")
    got = dict(zip(tidy["metric"], tidy["value"], strict=True))
    assert got["rate"] == pytest.approx(sum(rates), rel=1e-9)
    assert got["rate_time"] == pytest.approx(end - start, abs=1e-6)
    assert got["operations"] == CLIENTS * KEYS
    assert got["successful_executions"] == CLIENTS * KEYS
    for c, r in zip(rec["clients"]["each"], rates, strict=True):
        assert c["window_rate"] == pytest.approx(r, rel=1e-9)


def test_the_post_shows_each_client_and_the_sum(run):
    (rec,) = records(run, "omkg")
    post = (run / "reports" / "omkg" / "index.md").read_text()
    header = "| cell | run | client 1 | client 2 | client 3 | client 4 | sum (ops/s) | spread |"
    assert header in post
    below = post[post.index(header) :].splitlines()
    row = below[2]  # the header, its rule, the one run
    cols = [c.strip() for c in row.strip("|").split("|")]
    shares = [c["window_rate"] for c in rec["clients"]["each"]]
    shown = [float(x.replace(",", "")) for x in cols[2:6]]
    for s, v in zip(shown, shares, strict=True):
        assert s == pytest.approx(v, rel=0.01)  # three significant figures
    total = next(m["value"] for m in rec["metrics"] if m["name"] == "rate")
    assert float(cols[6].replace(",", "")) == pytest.approx(total, rel=0.01)
    assert "sum over the window all of them were measuring" in post
    # The listing says how many ran, and one client's command as typed.
    assert "# 4 clients at once, each in a directory of its own; each ran:" in post
    assert "ozone freon omkg" in post
    # The GC log of every JVM, not one overwritten by the others: each names its collector.
    gc = (rec["path"].parent / "raw" / "gc.log").read_text()
    assert gc.count("[gc] Using ") == CLIENTS


def strace_table(text: str) -> dict[str, int]:
    """strace -c's summary by its header's columns (right-aligned under their names): each
    syscall's calls, and the total's."""
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("% time"))
    end = lines[head].index("calls") + len("calls")
    calls = {}
    for ln in lines[head + 2 :]:
        if not ln.strip() or ln.startswith("---"):
            continue
        calls[ln.split()[-1]] = int(ln[:end].split()[-1])
    return calls


def test_straces_own_table_gives_every_count_of_the_freon_run_it_wrapped(run):
    tidy = pd.read_csv(run / "results" / "strace-ockg" / "tidy.csv")
    recs = records(run, "strace-ockg")
    assert sorted(r["cell"] for r in recs) == ["threads=1", "threads=4"]
    for rec in recs:
        assert rec["status"] == "done", rec["reason"]
        raw = rec["path"].parent / "raw"
        (table,) = raw.glob("output-*strace.txt")
        calls = strace_table(table.read_text())
        # freon under strace did its work: its own summary counts every key.
        assert f"Successful executions: {STRACE_KEYS}" in (raw / "command.log").read_text()
        rows = tidy[tidy["cell"] == rec["cell"]]
        v = dict(zip(rows["metric"], rows["value"], strict=True))
        assert v["syscalls"] == calls["total"]
        assert v["write_calls"] == calls.get("write", 0)
        assert v["fsync_calls"] == calls.get("fsync", 0) + calls.get("fdatasync", 0)
        assert v["syscalls"] > 0
    post = (run / "reports" / "strace-ockg" / "index.md").read_text()
    joined = " ".join(post.replace("\\\n", " ").split())
    assert "-e trace=write,writev,sendmsg,sendto,fsync,fdatasync ozone freon ockg" in joined


_PUT = re.compile(r'"PUT /bucket1/(\S+)/(\d+) HTTP/1\.1" (\d{3}) ')


def test_every_s3_object_is_a_put_the_gateway_answered_and_the_key_pair_stays_masked(run):
    """freon s3kg against the gateway of config/examples/s3-freon.yaml: freon's own count of
    objects is the gateway's own count of PUTs it answered with 200 under that run's prefix
    (its request log, kept with the cluster's), and the key pair the cells were given is in
    nothing perfpost kept."""
    from perfpost.clusters.ozone import S3_ACCESS_KEY, S3_SECRET_KEY

    recs = records(run, "s3kg")
    assert sorted(r["labels"]["threads"] for r in recs) == ["1", "4"]
    (gateway,) = (run / "results" / "clusters").glob("ozone-*/start-1/logs/localhost/s3g-0.log")
    puts: dict[str, list[tuple[int, str]]] = {}
    for prefix, i, status in _PUT.findall(gateway.read_text()):
        puts.setdefault(prefix, []).append((int(i), status))
    for rec in recs:
        assert rec["status"] == "done", rec["reason"]
        log = (rec["path"].parent / "raw" / "freon.log").read_text()
        assert f"Successful executions: {S3_OBJECTS}\n" in log
        (prefix,) = _PREFIX.findall(log)
        assert sorted(puts[prefix]) == [(i, "200") for i in range(S3_OBJECTS)]
        assert rec["command"].startswith("env AWS_ACCESS_KEY_ID=*** AWS_SECRET_ACCESS_KEY=*** ")
    kept = [p for d in ("results", "reports") for p in (run / d).rglob("*") if p.is_file()]
    assert not [p for p in kept if S3_SECRET_KEY.encode() in p.read_bytes()]
    # The access key is the user's name to a gateway without Kerberos: the OM's own log
    # names the user that made each bucket's keys. Nothing perfpost wrote holds it.
    daemons = run / "results" / "clusters"
    ours = [p for p in kept if not (p.is_relative_to(daemons) and "/logs/" in str(p))]
    assert not [p for p in ours if S3_ACCESS_KEY.encode() in p.read_bytes()]
    post = (run / "reports" / "s3kg" / "index.md").read_text()
    assert "s3g on localhost" in post
    assert "ozone freon s3kg -b bucket1 -e http://" in post
    assert "export AWS_SECRET_ACCESS_KEY='***'" in post
    assert "provisioned by perfpost from Maven Central" in post  # only the key pair masked


def test_the_datanodes_ratis_address_and_id_are_the_ones_it_started_with(run):
    """{cluster.datanode_ratis} and {cluster.datanode_id}, as every cell on the cluster got
    them: the port and UUID the datanode's own log says its Ratis server started with."""
    (rec,) = records(run, "omkg")
    fields = rec["cluster_fields"]
    (log,) = (run / "results" / "clusters").glob("ozone-*/start-1/logs/localhost/datanode-0.log")
    text = log.read_text()
    (uuid,) = set(re.findall(r"Starting XceiverServerRatis\(([0-9a-f-]{36})\)", text))
    (port,) = set(re.findall(r"is started using port RATIS=(\d+)\n", text))
    assert fields["cluster.datanode_id"] == uuid
    assert fields["cluster.datanode_ratis"] == f"127.0.0.1:{port}"
