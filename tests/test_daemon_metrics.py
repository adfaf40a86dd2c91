"""The daemons' own metrics as the sampler's curl brings them: a datanode's JMX answers (its
beans as Ozone 2.2.0 served them here, trimmed to the attributes read, and a second Ratis
group added by hand), one JSON document per query, the last one cut short."""

from pathlib import Path

import pytest

from perfpost.clusters import metrics

DATA = Path(__file__).parent / "data" / "jmx" / "datanode.txt"


def test_a_datanodes_beans_give_each_metric_once():
    got = metrics.read(DATA.read_text(), metrics.sources("ozone", "datanode"))
    assert got["gc_time"] == 202  # GcTimeMillis, a counter: its rate is taken later
    assert got["gcs"] == 14
    assert got["heap_used"] == 62.56211
    assert got["ratis_syncs"] == 67 + 33  # counters summed over the Ratis groups
    assert got["ratis_sync_p50"] == 2.5  # gauges: the busiest group's
    assert got["ratis_sync_p99"] == 5.311609
    assert got["ratis_flush_p50"] == 1.402102
    assert got["ratis_queue"] == 0
    assert got["write_chunks"] == 20
    assert got["chunk_bytes"] == 20480
    assert "ratis_append_p50" not in got  # no such bean in the answer: nothing invented


def test_the_queries_are_one_per_bean_pattern_and_quoted_for_a_url():
    urls = metrics.urls("http://h1:9882", metrics.sources("ozone", "datanode"))
    assert urls == [
        "http://h1:9882/jmx?qry=Hadoop:service=*,name=JvmMetrics",
        "http://h1:9882/jmx?qry=ratis:name=ratis.log_worker.*",
        "http://h1:9882/jmx?qry=Hadoop:service=HddsDatanode,name=CSMMetrics*",
        "http://h1:9882/jmx?qry=Hadoop:service=HddsDatanode,name=StorageContainerMetrics",
    ]


@pytest.mark.parametrize(
    ("kind", "role"), [(k, r) for k, roles in metrics.BY_ROLE.items() for r in roles]
)
def test_every_metric_has_a_unit_and_a_meaning(kind, role):
    for s in metrics.sources(kind, role):
        assert s.unit in {"ratio", "1/s", "B", "B/s", "s", "count"}, s
        assert s.meaning, s
        assert not s.ops or s.ops in {x.name for x in metrics.sources(kind, role)}, s


def test_daemons_read_every_few_samples_give_rates_over_their_own_reads():
    """Samples at 0, 1, 2, 3 s; the daemon read at 0, 2 and 3 s (every second sample, and
    the last): Ratis' sync count 100 -> 140 -> 150 is 20/s over the first two seconds and 10/s
    over the last, each interval as long as the reads it lies between."""
    from perfpost.instrument import rates, sampler

    def one(t: float, count: int | None) -> str:
        text = (
            f"{sampler.SAMPLE_MARKER} {t}\n==> /proc/stat <==\n"
            f"cpu  {1 + 50 * t:.0f} 0 1 {1 + 50 * t:.0f} 0 0 0 0 0 0\n"
            "==> /proc/meminfo <==\nMemTotal: 10 kB\nMemAvailable: 5 kB\n"
            "==> /proc/diskstats <==\n   8 0 sda 0 0 0 0 0 0 0 0 0 0 0\n"
        )
        if count is not None:
            bean = f'"name": "ratis:name=ratis.log_worker.x@group-1.syncTime", "Count": {count}'
            text += f'\n==> daemon:oz:datanode <==\n{{"beans": [{{{bean}}}]}}\n'
        return text

    data = sampler.parse(one(0, 100) + one(1, None) + one(2, 140) + one(3, 150))
    found = {"oz:datanode": metrics.sources("ozone", "datanode")}
    got = [
        (p.t, p.seconds, p.value)
        for p in rates.intervals(data, daemons=found)
        if p.metric == "ratis_syncs"
    ]
    assert got == [(2.0, 2.0, 20.0), (3.0, 1.0, 10.0)]

    # As the record keeps them, and resources.csv reads them back: the host's intervals are
    # a second each, the daemons' as long as the reads they lie between, though both end at
    # t = 2 (one length per end gave the host's interval the daemons' 2 s there).
    from perfpost.analysis import resources as tables
    from perfpost.instrument import resources

    kept = resources.series(data, 0.0, {}, found)
    record = {"experiment": "e", "cell": "c", "host": "h", "repeat": 1, "attempt": 1}
    record["status"] = "done"
    record["resources"] = {"hosts": {"h": {"series": kept}}}
    csv = tables.series_table([record], [])
    cpu = csv[(csv["resource"] == "cpu") & (csv["metric"] == "busy")]
    assert list(zip(cpu["t"], cpu["seconds"], strict=True)) == [(1, 1), (2, 1), (3, 1)]
    assert cpu["value"].tolist() == [0.5, 0.5, 0.5]  # 50 user of 100 jiffies each second
    syncs = csv[csv["metric"] == "ratis_syncs"]
    assert list(zip(syncs["t"], syncs["seconds"], syncs["value"], strict=True)) == [
        (2, 2, 20),
        (3, 1, 10),
    ]
