"""The checks that judge an experiment's design (perfpost.analysis.design): each on a case
where it must fire and one where it must not, with expected values worked out here by hand
or by enumeration, not taken from the module."""

import itertools

import pandas as pd
import pytest
from scipy import stats as sps

from perfpost import tools
from perfpost.analysis import design

# -- warm-up: Mann-Kendall's S summed over cells, its exact p --------------------------------


def _s(values):
    return sum((b > a) - (b < a) for i, a in enumerate(values) for b in values[i + 1 :])


def _enumerated_p(groups):
    """P(|S_total| >= |s|) over every order of every group: the definition, by brute force."""
    s = sum(_s(g) for g in groups)
    orders = [list(itertools.permutations(g)) for g in groups]
    hits = total = 0
    for combo in itertools.product(*orders):
        total += 1
        hits += abs(sum(_s(list(o)) for o in combo)) >= abs(s)
    return hits / total


@pytest.mark.parametrize(
    "groups",
    [
        [[1.0, 2.0, 3.0, 4.0], [10.0, 30.0, 20.0]],
        [[5.0, 3.0, 4.0, 1.0, 2.0], [2.0, 1.0, 3.0]],
        [[1.0, 4.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]],
    ],
)
def test_summed_trend_p_is_the_enumerated_p(groups):
    s, most, p, _ = design.summed_trend(groups)
    assert s == sum(_s(g) for g in groups)
    assert most == sum(len(g) * (len(g) - 1) // 2 for g in groups)
    assert p == pytest.approx(_enumerated_p(groups), rel=1e-12)


def test_one_group_matches_scipys_exact_kendall():
    values = [3.1, 1.2, 4.4, 5.0, 2.9, 6.3, 7.7]
    _, _, p, _ = design.summed_trend([values])
    tau = sps.kendalltau(range(len(values)), values, method="exact")
    assert p == pytest.approx(tau.pvalue, rel=1e-9)


def _runs(cells_values, start="2026-01-01T00:00:00", cluster="hdfs-1/start-1"):
    """tidy and cells tables for runs of ``cells_values`` (cell -> values in start order),
    the cells' runs one after another on one cluster start."""
    tidy, cells = [], []
    t = pd.Timestamp(start, tz="UTC")
    for cell, values in cells_values.items():
        for i, v in enumerate(values, start=1):
            t += pd.Timedelta(seconds=10)
            tidy.append(
                {
                    "cell": cell,
                    "host": "h",
                    "repeat": i,
                    "metric": "rate",
                    "value": v,
                    "unit": "1/s",
                    "status": "done",
                }
            )
            cells.append(
                {
                    "cell": cell,
                    "host": "h",
                    "repeat": i,
                    "status": "done",
                    "start": t.isoformat(),
                    "clusters": cluster,
                }
            )
    return pd.DataFrame(tidy), pd.DataFrame(cells)


CLUSTER = [{"ref": "hdfs-1/start-1", "name": "hdfs", "cells": ["a", "b"]}]


def test_warmup_fires_on_runs_that_rise_after_the_start():
    # The hcfs post's HDFS runs: 29.3 -> 42.0 over five runs, in both cells.
    tidy, cells = _runs({"a": [29.3, 31.0, 35.2, 38.9, 42.0], "b": [20.1, 22.5, 23.0, 26.4, 27.7]})
    found, untestable, _ = design.warmup(tidy, cells, CLUSTER, "rate")
    # Both cells in perfect order: S = 10 + 10 of at most 20, and the only orders as far are
    # both ascending or both descending: p = 2 / (120 * 120).
    assert not untestable
    assert len(found) == 1
    assert "S = +20 of at most 20" in found[0].caveat
    assert f"p = {2 / 14400:.2g}" in found[0].caveat
    assert "faster" in found[0].caveat


def test_warmup_on_two_clusters_is_one_caveat_naming_each():
    # hcfs in a default run: Ozone's and HDFS's runs both rose after their starts. Each start
    # in perfect order over two cells of five runs: S = +20 of 20, exact p = 2 / 120^2 each,
    # 2.8e-4 after Holm over two (both the same, so both doubled).
    up = {"a": [29.3, 31.0, 35.2, 38.9, 42.0], "b": [20.1, 22.5, 23.0, 26.4, 27.7]}
    t1, c1 = _runs(up, cluster="ozone-1/start-1")
    t2, c2 = _runs({"c": up["a"], "d": up["b"]}, cluster="hdfs-1/start-1", start="2026-01-02")
    clusters = [
        {"ref": "ozone-1/start-1", "name": "ozone"},
        {"ref": "hdfs-1/start-1", "name": "hdfs"},
    ]
    found, _, _ = design.warmup(pd.concat([t1, t2]), pd.concat([c1, c2]), clusters, "rate")
    assert len(found) == 1
    p = f"{2 * 2 / 14400:.2g}"
    assert found[0].caveat.startswith(
        f"On `ozone` and `hdfs`, runs got faster with their order since the cluster started "
        f"(`ozone`: S = +20 of at most 20, p = {p}, rate 24.7 ops/s to 34.9 ops/s; `hdfs`: "
        f"S = +20 of at most 20, p = {p}, rate 24.7 ops/s to 34.9 ops/s; p after Holm's "
        "correction, each cell's first run to its last, medians): a cluster warming up"
    )
    assert set(found[0].cells) == {"a", "b", "c", "d"}


def test_warmup_stays_silent_without_a_trend():
    tidy, cells = _runs({"a": [35.0, 29.3, 42.0, 31.0, 38.9], "b": [23.0, 27.7, 20.1, 26.4, 22.5]})
    found, untestable, facts = design.warmup(tidy, cells, CLUSTER, "rate")
    assert not found
    assert not untestable
    assert any("S = " in f for f in facts)


def test_warmup_with_too_few_runs_says_so_and_never_nothing_flagged():
    tidy, cells = _runs({"a": [1.0, 2.0, 3.0]}, cluster="hdfs-1/start-1")
    found, untestable, _ = design.warmup(tidy, cells, CLUSTER, "rate")
    # 3 runs: the most extreme orders are 2 of 6, p = 0.333 at best.
    assert not found
    assert len(untestable) == 1
    assert "0.333" in untestable[0].why


# -- a disk faster than a disk -------------------------------------------------------------


ENVS = {
    "h": {
        "disks": [
            {"name": "vda", "model": "unknown", "rotational": True, "transport": None},
            {"name": "nvme0n1", "model": "x", "rotational": False, "transport": "nvme"},
        ]
    }
}


def _dd_run(throughput, device="vda", cell="storage=disk"):
    tidy = pd.DataFrame(
        [
            {
                "cell": cell,
                "host": "h",
                "repeat": r,
                "metric": m,
                "value": v,
                "unit": u,
                "status": "done",
            }
            for r in (1, 2, 3)
            for m, v, u in (("throughput", throughput, "B/s"), ("bytes", 102_400_000, "B"))
        ]
    )
    window = pd.DataFrame(
        [
            {
                "cell": cell,
                "host": "h",
                "repeat": r,
                "status": "done",
                "node": "h",
                "resource": "dir:/var/tmp/perfpost",
                "metric": "device",
                "value": 0.0,
                "unit": "",
                "detail": device,
            }
            for r in (1, 2, 3)
        ]
    )
    cells = pd.DataFrame({"cell": [cell] * 3, "host": ["h"] * 3, "repeat": [1, 2, 3]})
    where = {cell: {"params": {"mode": "write", "conv": "fsync"}, "dirs": ["/var/tmp/perfpost"]}}
    return tidy, cells, window, where


DD = {"tool": "dd", "axes": {"storage": ["disk"]}, "params": {}}


def test_fsynced_writes_faster_than_any_spinning_disk_fire():
    tidy, cells, window, where = _dd_run(870e6)  # the default run's vda
    found = design.fast_disk(DD, tidy, cells, ENVS, window, where)
    assert len(found) == 1
    f = found[0]
    assert f.undermines
    assert f.cells == ("storage=disk",)
    assert "870 MB/s" in f.caveat
    assert "554 MB/s" in f.caveat
    assert "`vda`" in f.caveat


def test_fsynced_writes_a_disk_can_make_do_not_fire():
    # The Ratis post's own dd check on a Seagate disk: 164 MB/s.
    tidy, cells, window, where = _dd_run(164e6)
    assert design.fast_disk(DD, tidy, cells, ENVS, window, where) == []


def test_a_solid_state_device_has_no_spinning_ceiling():
    tidy, cells, window, where = _dd_run(2.5e9, device="nvme0n1")
    assert design.fast_disk(DD, tidy, cells, ENVS, window, where) == []


def test_writes_without_a_flush_say_nothing_of_the_device():
    tidy, cells, window, where = _dd_run(870e6)
    where = {c: {**w, "params": {"mode": "write"}} for c, w in where.items()}
    assert design.fast_disk(DD, tidy, cells, ENVS, window, where) == []


def _probed(seconds, disk="vda", writes=64):
    """ENVS with the env step's probe of ``disk``: dd's own seconds for ``writes`` synced
    4 KiB writes (the line as :mod:`perfpost.run.diskprobe` parses it)."""
    probe = {"disk": disk, "dir": "/var/tmp/perfpost", "writes": writes, "block_bytes": 4096}
    probe |= {"seconds": seconds, "per_write": seconds / writes}
    return {"h": {**ENVS["h"], "sync_probe": [probe]}}


def test_a_disk_whose_synced_writes_beat_a_platter_fires_though_its_runs_did_not():
    # The default run's dd-fsync on this machine: 512 MB/s with conv=fsync, under the 554 MB/s
    # of the fastest spinning disk, so the runs alone cannot tell; dd said 64 synced writes
    # took 0.0289303 s: 452 us each (0.0289303 / 64 = 0.000452), under half a turn at 15k rpm.
    tidy, cells, window, where = _dd_run(512e6)
    assert design.fast_disk(DD, tidy, cells, ENVS, window, where) == []
    (f,) = design.fast_disk(DD, tidy, cells, _probed(0.0289303), window, where)
    assert f.undermines
    assert f.cells == ("storage=disk",)
    assert "64 writes of 4 KiB synced to it one by one" in f.caveat
    assert "took 452 us each, under the 2 ms a platter takes" in f.caveat
    assert "in /var/tmp/perfpost" in f.caveat


def test_a_probe_a_spinning_disk_could_have_made_does_not_fire():
    # A 7,200 rpm disk: a synced write waits about one turn, 8.3 ms: 64 take 0.53 s.
    tidy, cells, window, where = _dd_run(164e6)
    assert design.fast_disk(DD, tidy, cells, _probed(0.533), window, where) == []
    # Nor does a fast probe of another disk, nor one where no run waited on the disk.
    tidy, cells, window, where = _dd_run(512e6)
    assert design.fast_disk(DD, tidy, cells, _probed(0.029, disk="sdb"), window, where) == []
    unsynced = {c: {**w, "params": {"mode": "write"}} for c, w in where.items()}
    assert design.fast_disk(DD, tidy, cells, _probed(0.029), window, unsynced) == []


def _sync_window(p50):
    rows = []
    for r in (1, 2):
        rows += [
            {
                "cell": "c",
                "host": "h",
                "repeat": r,
                "status": "done",
                "node": "h",
                "resource": "daemon:ratis:datanode",
                "metric": "ratis_sync_p50",
                "value": p50,
                "unit": "s",
                "detail": None,
            },
            {
                "cell": "c",
                "host": "h",
                "repeat": r,
                "status": "done",
                "node": "h",
                "resource": "dir:/var/tmp/perfpost/ratis-1",
                "metric": "device",
                "value": 0.0,
                "unit": "",
                "detail": "vda",
            },
        ]
    return pd.DataFrame(rows)


def test_log_syncs_faster_than_a_platter_turns_fire():
    found = design.fast_disk(
        {"tool": "freon", "axes": {}, "params": {}},
        pd.DataFrame(columns=["cell", "host", "repeat", "metric", "value", "unit", "status"]),
        pd.DataFrame({"cell": ["c"], "host": ["h"], "repeat": [1]}),
        ENVS,
        _sync_window(469e-6),  # the default run's datanode: 469 us
        {},
    )
    assert len(found) == 1
    assert "469 us" in found[0].caveat
    assert "2 ms" in found[0].caveat


def test_log_syncs_a_spinning_disk_can_make_do_not_fire():
    found = design.fast_disk(
        {"tool": "freon", "axes": {}, "params": {}},
        pd.DataFrame(columns=["cell", "host", "repeat", "metric", "value", "unit", "status"]),
        pd.DataFrame({"cell": ["c"], "host": ["h"], "repeat": [1]}),
        ENVS,
        _sync_window(8e-3),  # half a turn at 7,200 rpm is 4.2 ms; a seek more
        {},
    )
    assert found == []


# -- data that never left memory ---------------------------------------------------------


MEMORY = 24 * 2**30  # this machine's: vm.dirty_background_ratio 10% of it is 2.58 GB
SYSCTL = {
    "vm.dirty_background_bytes": "0",
    "vm.dirty_background_ratio": "10",
    "vm.dirty_expire_centisecs": "3000",
}
HOST = {"h": {"memory_bytes": MEMORY, "sysctl": SYSCTL}}


def _dcg(ops=1500.0, seconds=11.0, sync="false", on_disk=True):
    cell = "data=disk,ratis=memdisk"
    tidy = pd.DataFrame(
        [
            {
                "cell": cell,
                "host": "h",
                "repeat": r,
                "metric": m,
                "value": v,
                "unit": u,
                "status": "done",
            }
            for r in (1, 2, 3)
            for m, v, u in (
                ("rate", 400.0, "1/s"),
                ("operations", ops, "count"),
                ("wall_time", seconds, "s"),
            )
        ]
    )
    where = {
        cell: {
            "params": {"subcommand": "dcg", "options": {"s": 10240}},
            "cluster": {"kind": "ozone", "site": {"hdds.container.chunk.write.sync": sync}},
            "on_disk": on_disk,
        }
    }
    return tidy, where


FREON = {"tool": "freon", "axes": {}, "params": {}}


def test_chunks_the_page_cache_could_hold_fire():
    tidy, where = _dcg()
    found = design.in_memory(FREON, tidy, HOST, "rate", where)
    # 1,500 chunks of 10,240 bytes: 15.4 MB a run, in 11 s, against 10% of 24 GiB (2.58 GB)
    # and 30 s before a dirty page must be written back.
    assert len(found) == 1
    (f,) = found
    assert "15.4 MB" in f.caveat
    assert "2.58 GB" in f.caveat
    assert "30 s old" in f.caveat
    assert f.undermines


def test_chunks_synced_as_they_are_written_do_not_fire():
    tidy, where = _dcg(sync="true")
    assert design.in_memory(FREON, tidy, HOST, "rate", where) == []


def test_runs_longer_than_a_dirty_page_may_wait_do_not_fire():
    tidy, where = _dcg(seconds=45.0)
    assert design.in_memory(FREON, tidy, HOST, "rate", where) == []


def test_data_beyond_a_tenth_of_the_writeback_threshold_do_not_fire():
    # 30,000 chunks: 307 MB a run, over a tenth of 2.58 GB.
    tidy, where = _dcg(ops=30000.0)
    assert design.in_memory(FREON, tidy, HOST, "rate", where) == []


def test_data_in_a_tmpfs_is_memory_by_design():
    tidy, where = _dcg(on_disk=False)
    assert design.in_memory(FREON, tidy, HOST, "rate", where) == []


def test_a_metric_with_the_sync_added_is_not_asked():
    tidy, where = _dcg()
    assert design.in_memory(FREON, tidy, HOST, "rate_adjusted", where) == []


# -- a setting that did not take effect ------------------------------------------------------


def test_a_layout_the_datanode_fell_back_from_labels_its_cells():
    clusters = [
        {
            "name": "ozone-chunk",
            "id": "ozone-1",
            "cells": ["storage=ozone-chunk"],
            "overridden": [
                {
                    "key": "ozone.scm.container.layout",
                    "asked": "FILE_PER_CHUNK",
                    "ran": "FILE_PER_BLOCK",
                    "daemon": "datanode",
                    "host": "localhost",
                }
            ],
        },
        {"name": "ozone", "id": "ozone-2", "cells": ["storage=ozone-block"], "overridden": []},
    ]
    found = design.settings_not_applied(clusters)
    assert len(found) == 1
    assert found[0].cells == ("storage=ozone-chunk",)
    assert design.as_label("storage=ozone-chunk", found) == (
        "storage=ozone-chunk (ran FILE_PER_BLOCK, not FILE_PER_CHUNK)"
    )
    assert design.as_label("storage=ozone-block", found) == "storage=ozone-block"


# -- a clock too coarse for its run ----------------------------------------------------------


def test_a_whole_second_clock_on_a_short_run_fires(monkeypatch):
    import types

    fake = types.SimpleNamespace(CLOCKS={"total": ("total", 1.0, "a clock of whole seconds")})
    monkeypatch.setattr(tools, "get", lambda name: fake)
    tidy = pd.DataFrame(
        [
            {
                "cell": "c",
                "host": "h",
                "repeat": r,
                "metric": "total",
                "value": v,
                "unit": "s",
                "status": "done",
            }
            for r, v in ((1, 4.0), (2, 40.0))
        ]
    )
    found = design.coarse_clock({"tool": "x"}, tidy, "total")
    # One tick of 1 s is 25% of a 4 s run, 2.5% of a 40 s one: only the first is named.
    assert len(found) == 1
    assert found[0].caveat.startswith("1 of 2 runs")


def test_freons_whole_second_summary_is_a_coarse_clock_for_short_runs():
    # freon's own tool declares it: "Total execution time (sec): 4" is a run of 4 whole
    # seconds; one tick is 25% of it, over the 5% the check allows (20 ticks).
    tidy = pd.DataFrame(
        [
            {
                "cell": "c",
                "host": "h",
                "repeat": r,
                "metric": "total_execution_time",
                "value": v,
                "unit": "s",
                "status": "done",
            }
            for r, v in ((1, 4.0), (2, 61.0))
        ]
    )
    (found,) = design.coarse_clock({"tool": "freon"}, tidy, "total_execution_time")
    assert found.caveat.startswith("1 of 2 runs")
    assert "whole seconds" in found.caveat


def test_a_findings_cells_are_named_by_the_setting_they_share():
    # local-reads: the disk finding's cells are exactly the 6 with cache=dropped of its 12.
    cells = [
        f"readers={r},bs={b},cache={c}" for r in (1, 3, 6) for b in ("4k", "1M")
        for c in ("hot", "dropped")
    ]  # fmt: skip
    names = {c: c.replace(",", ", ") for c in cells}
    dropped = tuple(c for c in cells if c.endswith("cache=dropped"))
    listed = ", ".join(f"`{c}`" for c in dropped)
    f = design.Finding(check="x", caveat=f"what these runs call the disk ({listed}) is a cache",
                       cells=dropped)  # fmt: skip
    assert design.renamed(f, names).caveat == (
        "what these runs call the disk (the 6 cells with `cache=dropped`) is a cache"
    )
    # Two settings shared: both named.
    two = tuple(c for c in dropped if "bs=1M" in c)
    f2 = design.Finding(check="x", caveat=", ".join(f"`{c}`" for c in two), cells=two)
    assert design.renamed(f2, names).caveat == "the 3 cells with `bs=1M, cache=dropped`"
    # Cells no setting picks out alone stay listed, each by its name.
    odd = (dropped[0], dropped[-1])
    f3 = design.Finding(check="x", caveat=", ".join(f"`{c}`" for c in odd), cells=odd)
    assert design.renamed(f3, names).caveat == (
        "`readers=1, bs=4k, cache=dropped`, `readers=6, bs=1M, cache=dropped`"
    )
