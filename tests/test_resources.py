"""What the post says bound each cell, and what the Validity section flags, from window
tables written here by hand: each expected sentence follows from the numbers in the rows
(a resource at least 90% busy for at least half the step is saturated)."""

from __future__ import annotations

import pandas as pd
import pytest

from perfpost.analysis import resource_checks, resource_plots, resources


def rows(cell, repeat, node, roles, cpu_busy, cpu_share, disks=(), procs=(), dirs=(), step=None):
    out = []

    def add(resource, metric, value, unit="ratio", detail=""):
        out.append(
            {
                "experiment": "e",
                "cell": cell,
                "host": "h1",
                "repeat": repeat,
                "attempt": 1,
                "status": "done",
                "node": node,
                "roles": roles,
                "resource": resource,
                "metric": metric,
                "value": value,
                "unit": unit,
                "detail": detail,
            }
        )

    add("cpu", "cores", 4, "count")
    add("cpu", "busy", cpu_busy)
    add("cpu", "busy_time_share", cpu_share)
    add("window", "interval", 1.0, "s")
    if step is not None:
        add("window", "seconds", step, "s")
    for name, util, share, written in disks:
        add(f"disk:{name}", "util", util)
        add(f"disk:{name}", "busy_time_share", share)
        add(f"disk:{name}", "write_total", written, "B")
        add(f"disk:{name}", "write_bytes", written / 10, "B/s")
    for label, cores in procs:
        add(f"process:{label}", "cpu", cores, "cores")
    for path, device in dirs:
        add(f"dir:{path}", "device", float("nan"), "", device)
    return out


def table(*parts):
    return pd.DataFrame([r for p in parts for r in p])


def test_a_cell_whose_cpu_was_busy_names_the_cpu_with_its_numbers():
    w = table(
        rows("a", 1, "h1", "client", 0.97, 0.9, [("sda", 0.12, 0.0, 1e6)]),
        rows("a", 2, "h1", "client", 0.99, 1.0, [("sda", 0.10, 0.0, 1e6)]),
        rows("a", 3, "h1", "client", 0.95, 0.7, [("sda", 0.14, 0.0, 1e6)]),
    )
    (cell,) = resources.cell_profiles(w, [], {"a": 3.5})
    assert cell["bound"]["what"] == [("CPU", "h1")]
    # Medians of three runs: busy 97%, busy-time share 90%, sda 12%; the tool 3.5 of the
    # 3.88 busy cores: the cell's own work.
    assert cell["bound"]["sentence"] == (
        "CPU 97% of 4 cores busy, at least 90% busy for 90% of the run (the tool 3.5 cores); "
        "disk sda 12% utilised: this cell measured the CPU"
    )


def test_a_step_shorter_than_two_samples_is_not_given_a_bottleneck_or_a_flag():
    """A 12 ms read sampled every second: the 1 s around it says nothing of it."""
    w = table(
        rows("r", 1, "h1", "client", 0.99, 1.0, step=0.012),
        rows("r", 2, "h1", "client", 0.98, 1.0, step=0.010),
        rows("r", 3, "h1", "client", 0.97, 1.0, step=0.014),
        rows("long", 1, "h1", "client", 0.99, 1.0, step=2.0),
    )
    short, long = resources.cell_profiles(w, [], {"r": 0.0, "long": 1.9})
    assert short["bound"]["verdict"] == "unresolved"
    assert short["bound"]["sentence"] == (
        "the measured step took 12 ms (median), shorter than 2 sampling intervals of 1 s: "
        "the samples around it are mostly time outside it, so they cannot say what bound it"
    )
    assert long["bound"]["what"] == [("CPU", "h1")]  # two intervals: resolved
    # The table shows no share for it, and the overview figure does not draw it.
    (row,) = [r for r in resources.table([short])["rows"]]
    assert row["cpu"] == "step too short"
    assert row["util"] == "-"
    got = resource_checks.check(w, [])
    assert [f.split(":")[0] for f in got["flags"]] == ["`long`"]
    assert "3 runs measured for less than 2 sampling intervals" in got["facts"][1]


def test_a_cpu_busy_with_other_work_is_said_to_be_contention():
    w = table(rows("a", 1, "h1", "client", 0.98, 0.95))
    (cell,) = resources.cell_profiles(w, [], {"a": 0.4})  # 0.4 of 3.92 busy cores
    assert cell["bound"]["sentence"].endswith(
        "(the tool 0.4 cores; the rest was other work on the host): the CPU was saturated "
        "mostly by other work on the host, so these runs competed for it"
    )


def test_a_saturated_disk_on_a_cluster_host_is_named_there():
    w = table(
        rows("a", 1, "c1", "client", 0.30, 0.0),
        rows(
            "a",
            1,
            "d1",
            "ozone datanode",
            0.20,
            0.0,
            [("vdb", 0.96, 0.8, 5e8), ("vda", 0.05, 0.0, 1e6)],
            [("ozone:datanode", 0.6)],
        ),
    )
    (cell,) = resources.cell_profiles(w, [])
    assert [p["node"] for p in cell["nodes"]] == ["c1", "d1"]  # the client first
    assert cell["bound"]["what"] == [("disk vdb", "d1")]
    assert cell["bound"]["sentence"] == (
        "disk vdb 96% utilised, at least 90% for 80% of the run on d1; CPU 20% of 4 cores busy "
        "(datanode 0.6 cores): this cell measured the disk"
    )


def test_nothing_saturated_says_so_with_the_busiest_of_each():
    w = table(
        rows("a", 1, "c1", "client", 0.30, 0.0, [("sda", 0.2, 0.0, 1e6)]),
        rows("a", 1, "d1", "hdfs datanode", 0.60, 0.2, [("sdb", 0.7, 0.3, 1e8)]),
    )
    (cell,) = resources.cell_profiles(w, [])
    assert cell["bound"]["what"] == []
    assert cell["bound"]["sentence"] == (
        "no single resource saturated: CPU 60% of 4 cores busy, at least 90% busy for 20% of "
        "the run on d1; disk sdb 70% utilised, at least 90% for 30% of the run on d1"
    )


def test_validity_flags_a_cpu_bound_system_under_test_and_writes_on_another_disk():
    w = table(
        # A cluster cell: the client's host saturated, the datanode's not: nothing flagged
        # for the CPU (the system under test is the datanode's host).
        rows("c", 1, "c1", "client", 0.99, 1.0),
        rows("c", 1, "d1", "ozone datanode", 0.5, 0.1, [("sda", 0.3, 0.0, 5e7)]),
        # A dd cell on its own host, CPU-bound in run 2 only; its directory is on sdb but
        # in run 2 sda took 90 MB and sdb 10 MB.
        rows(
            "d",
            1,
            "h1",
            "client",
            0.4,
            0.0,
            [("sdb", 0.5, 0.0, 9e7), ("sda", 0.1, 0.0, 1e7)],
            dirs=[("/data", "sdb1")],
        ),
        rows(
            "d",
            2,
            "h1",
            "client",
            0.95,
            0.6,
            [("sdb", 0.1, 0.0, 1e7), ("sda", 0.5, 0.0, 9e7)],
            dirs=[("/data", "sdb1")],
        ),
    )
    got = resource_checks.check(w, [])
    assert got["title"] == "Resources"
    assert len(got["flags"]) == 2
    cpu, disk = got["flags"]
    assert cpu.startswith("`d`: the system under test's host was CPU-bound (h1 r2: 95% busy")
    assert disk.startswith("`d`: another disk took more than twice the writes of the one")
    assert "h1 r2: 10 MB written to sdb under `/data`, 90 MB to sda" in disk
    assert "r1" not in disk
    assert "every second on 3 hosts (c1, d1, h1)" in got["facts"][0]


def test_a_cell_bound_in_some_runs_is_counted_apart_from_cells_bound_in_every_run():
    # hcfs in a default run: two cells CPU-bound in each of their runs, a third in 2 of its
    # 5, whose median (under 90% busy) the figure shows; a fourth never. "CPU-bound in 3 of
    # 4 cells" overstated the third.
    busy = {"a": [0.99] * 5, "b": [0.98] * 5, "c": [0.95, 0.95, 0.7, 0.7, 0.7], "d": [0.5] * 5}
    # Cell a's own processes took 0.2 of its 3.96 busy cores: other work took the CPU.
    w = table(
        *(
            rows(cell, r + 1, "h1", "client", share, 1.0 if share >= 0.9 else 0.0,
                 procs=[("ozone:datanode", 0.2 if cell == "a" else 3.0)])
            for cell, shares in busy.items()
            for r, share in enumerate(shares)
        )
    )  # fmt: skip
    got = resource_checks.check(w, [])
    assert got["headline"] == (
        "the host of the system under test was CPU-bound in every run of 2 of 4 cells and in "
        "2 of 5 runs of another, so they measured the CPU at least as much as what they set "
        "out to measure; in 1 of those cells the CPU went mostly to other work on the host"
    )
    # Cells bound in some runs only: the runs are counted, over all of them (20).
    got = resource_checks.check(table(*(rows("c", r + 1, "h1", "client", s, 1.0 if s >= 0.9
                                                 else 0.0) for r, s in enumerate(busy["c"])),
                                      *(rows("d", r + 1, "h1", "client", 0.5, 0.0)
                                        for r in range(5))), [])  # fmt: skip
    assert "CPU-bound in 2 of 10 runs (in 1 of 2 cells)" in got["headline"]
    # Every run of the flagged cells: the cells are counted ("every" where all were).
    bound = [rows(c, r + 1, "h1", "client", 0.99, 1.0) for c in "ab" for r in range(3)]
    got = resource_checks.check(table(*bound[:3]), [])
    assert "CPU-bound in every run, so" in got["headline"]
    got = resource_checks.check(table(*bound), [])
    assert "CPU-bound in every cell, so" in got["headline"]
    got = resource_checks.check(table(*bound, rows("d", 1, "h1", "client", 0.5, 0.0)), [])
    assert "CPU-bound in 2 of 3 cells, so" in got["headline"]


def test_a_cpu_bound_command_is_not_said_to_have_measured_the_storage():
    # The same CPU-bound run, once from dd (its subject is the disk) and once from a command
    # (iperf3's subject is the network; perfpost cannot know a command's).
    w = table(rows("d", 1, "h1", "client", 0.95, 0.6, [("sda", 0.1, 0.0, 1e7)]))
    for tool, said in (("dd", "the storage"), ("command", "what they set out to measure")):
        tidy = pd.DataFrame([{"cell": "d", "host": "h1", "repeat": 1, "tool": tool,
                              "metric": "wall_time", "value": 1.0, "status": "done"}])  # fmt: skip
        got = resource_checks.check(w, [], tidy)
        (cpu,) = got["flags"]
        assert cpu.endswith(f"at least as much as {said}.")
        assert got["headline"].endswith(f"at least as much as {said}")


def test_a_device_stacked_on_another_is_not_flagged():
    # A loop file system on vda: its writes are counted on loop0 and again on vda.
    w = table(
        rows(
            "d",
            1,
            "h1",
            "client",
            0.3,
            0.0,
            [("loop0", 0.5, 0.0, 6.7e7), ("vda", 0.4, 0.0, 7.1e7)],
            dirs=[("/mnt/x", "loop0")],
        )
    )
    assert resource_checks.check(w, [])["flags"] == []


def test_tool_cores_are_cpu_time_over_wall_time_medians():
    tidy = pd.DataFrame(
        [
            {"cell": "a", "host": "h", "repeat": r, "status": "done", "metric": m, "value": v}
            for r, cpu, wall in ((1, 1.0, 2.0), (2, 3.0, 2.0), (3, 2.0, 2.0))
            for m, v in (("tool_cpu_time", cpu), ("wall_time", wall))
        ]
    )
    assert resources.tool_cores(tidy) == {"a": 1.0}  # median of 0.5, 1.5, 1.0


def test_a_cpu_bound_run_says_when_other_work_took_the_cpu():
    w = table(rows("d", 1, "h1", "client", 0.98, 1.0), rows("d", 2, "h1", "client", 0.97, 1.0))
    # Run 1's tool kept 0.2 of the 3.92 busy cores busy, run 2's 3.5 of 3.88.
    tidy = pd.DataFrame(
        [
            {"cell": "d", "host": "h1", "repeat": r, "status": "done", "metric": m, "value": v}
            for r, cpu in ((1, 0.2), (2, 3.5))
            for m, v in (("tool_cpu_time", cpu), ("wall_time", 1.0))
        ]
    )
    (flag,) = resource_checks.check(w, [], tidy)["flags"]
    assert "h1 r1: 98% busy, at least 90% for 100% of the run, mostly by other work" in flag
    assert "h1 r2: 97% busy, at least 90% for 100% of the run)" in flag  # its own work
    assert flag.count("mostly by other work") == 1


def test_compare_shows_both_sides_resource_profile_per_cell():
    before = table(rows("a", 1, "h1", "client", 0.97, 0.9, [("sda", 0.2, 0.0, 1e6)]))
    after = table(
        rows("a", 1, "h1", "client", 0.40, 0.0, [("sda", 0.95, 0.8, 1e8)]),
        rows("b", 1, "h1", "client", 0.40, 0.0),  # only the candidate ran b
    )
    text = resource_checks.compare_markdown([("before", before, None), ("after", after, None)])
    lines = [ln for ln in text.splitlines() if ln.startswith("| `")]
    assert lines == [
        "| `a` | before | h1 | 97% of 4 | 90% | sda 20% | CPU |",
        "| `a` | after | h1 | 40% of 4 | 0% | sda 95% | disk sda |",
    ]


def test_a_tools_series_lands_on_the_telemetrys_clock_whatever_the_logs_zone():
    from perfpost.analysis.tidy import step_time

    start = 1_800_000_000.0  # the measured step's start, by the host's clock
    assert step_time(start + 1.5, start) == 1.5  # stamps read in the host's own zone
    assert step_time(start + 3600 + 1.5, start) == 1.5  # a host an hour east
    assert step_time(start - 5 * 3600 - 1800 + 2.25, start) == 2.25  # UTC-5:30
    assert step_time(start - 0.25, start) == -0.25  # a point just before the step: kept
    assert step_time(None, start) is None
    assert step_time(start, None) is None


def test_the_tools_gc_is_a_median_share_of_each_runs_step():
    tidy = pd.DataFrame(
        [
            {"cell": "a", "host": "h", "repeat": r, "status": "done", "metric": m, "value": v}
            for r, pauses, time, wall in ((1, 3, 0.1, 1.0), (2, 5, 0.2, 1.0), (3, 4, 0.3, 2.0))
            for m, v in (
                ("jvm_gc_pauses", pauses),
                ("jvm_gc_pause_time", time),
                ("wall_time", wall),
            )
        ]
    )
    # Shares 0.1, 0.2 and 0.15: the median 0.15; pauses 3, 5, 4: 4.
    got = resources.tool_gc(tidy)["a"]
    assert got["pauses"] == 4
    assert abs(got["share"] - 0.15) < 1e-12
    assert "heap_peak" not in got


def test_the_overview_s_title_stays_inside_the_figure_beside_long_cell_labels(tmp_path, figures):
    # Long cell labels push the axes right of the figure's centre: a title centred over the
    # axes lost its last word off the right edge (onefile's "resources while measuring").

    cell = "layout=FILE_PER_CHUNK,size=1M,threads=16,sync=on"
    w = table(rows(cell, 1, "h1", "client", 0.95, 0.9, step=5.0))
    title = "Chunk writes: one file per chunk vs one file per block"
    assert resource_plots.overview(w, [], title, tmp_path / "resources") is not None
    (fig,) = figures
    fig.canvas.draw()
    # The title, wherever it is put (over the figure, or over the axes as it was).
    (text,) = [t for t in [fig._suptitle, *(ax.title for ax in fig.axes)] if t and t.get_text()]
    ext, box = text.get_window_extent(fig.canvas.get_renderer()), fig.bbox
    assert box.x0 <= ext.x0, f"{text.get_text()!r}: {ext} outside {box}"
    assert ext.x1 <= box.x1, f"{text.get_text()!r}: {ext} outside {box}"
    assert " ".join(text.get_text().split()) == f"{title}: resources while measuring"


def test_the_overview_names_each_cell_as_the_post_does(tmp_path, figures):
    # The default hcfs's bars were labelled by cell id (`...,instrument=on` in every one).

    cell = "storage=ozone,buffer=default,instrument=on"
    w = table(rows(cell, 1, "h1", "client", 0.95, 0.9, step=5.0))
    names = {cell: "storage=ozone, buffer=default"}
    assert resource_plots.overview(w, [], "t", tmp_path / "resources", names) is not None
    (fig,) = figures
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["storage=ozone, buffer=default"]


def test_the_overview_s_bars_take_no_colour_a_post_gives_its_cells(tmp_path, figures):
    # onefile's post: blue and orange were FILE_PER_CHUNK and FILE_PER_BLOCK in its rate
    # figures and CPU and disk in this one, a colour meaning two things in one post.
    from matplotlib import pyplot as plt
    from matplotlib.colors import to_hex

    w = table(rows("a=1", 1, "h1", "client", 0.95, 0.9, step=5.0))
    assert resource_plots.overview(w, [], "t", tmp_path / "resources") is not None
    (fig,) = figures
    (ax,) = fig.axes
    bars = {to_hex(p.get_facecolor()) for p in ax.patches}
    assert len(bars) == 2, bars  # CPU and disk told apart
    series = {to_hex(c) for name in ("tab10", "tab20") for c in plt.get_cmap(name).colors}
    assert not bars & series, bars


def _latency_figure(tmp_path, figures, p50s):
    """A run's resources over time whose datanode synced its Ratis log in ``p50s`` (seconds,
    one a sampling interval): the figure."""
    rows_ = []
    for i, p50 in enumerate(p50s):
        t = float(i + 1)

        def add(resource, metric, value, t=t):
            rows_.append({"cell": "c", "host": "h1", "repeat": 1, "node": "h1", "t": t,
                          "seconds": 1.0, "resource": resource, "metric": metric,
                          "value": value})  # fmt: skip

        add("cpu", "busy", 0.99)
        add("process:ozone:datanode", "cpu", 0.1 + 0.02 * i)
        add("daemon:ozone:datanode", "ratis_sync_p50", p50)
        add("daemon:ozone:datanode", "ratis_syncs", 50.0)
    got = resource_plots.over_time(pd.DataFrame(rows_), None, "c", "h1", 1, "t", tmp_path / "r")
    assert got is not None
    (fig,) = figures
    fig.canvas.draw()
    return fig


def test_a_run_over_time_takes_no_colour_a_post_gives_its_cells(tmp_path, figures):
    # hcfs's post: localhost's CPU line was blue and the datanode's orange, the colours of
    # buffer=default and buffer=one-byte in its rate figures.
    from matplotlib import pyplot as plt
    from matplotlib.colors import to_hex

    fig = _latency_figure(tmp_path, figures, [0.5e-3] * 4)
    # The lines drawn from data: not the tool's rate (black), not the step's start and end.
    lines = [ln for ax in fig.axes for ln in ax.get_lines() if ln.get_linestyle() != ":"]
    drawn = {to_hex(ln.get_color()) for ln in lines}
    assert len(drawn) == 2, drawn  # the host, the datanode (its CPU and latency alike)
    series = {to_hex(c) for name in ("tab10", "tab20") for c in plt.get_cmap(name).colors}
    assert not drawn & series, drawn


def test_a_latency_far_from_zero_is_drawn_below_the_top_of_its_panel(tmp_path, figures):
    # A default run's teragen: the datanode's Ratis sync p50 at 0.49 to 0.54 ms over a run.
    # The panel starts at 0; its top had the autoscale's margin of the lines' own span
    # (5% of 0.05 ms), so the highest level ran along the frame. Every line of every panel
    # lies at least 3 pixels below its panel's top.
    fig = _latency_figure(tmp_path, figures, [(0.49 + 0.01 * i) / 1000 for i in range(6)])
    # The lines drawn from data (the dotted ones mark the step's start and end).
    drawn = {ax: [ln for ln in ax.get_lines() if ln.get_linestyle() != ":"] for ax in fig.axes}
    panels = [ax for ax, lines in drawn.items() if lines]
    assert panels[-1].get_ylabel() == "daemon latency\n(ms)"
    for ax in panels:
        top = ax.get_window_extent().y1
        ys = [ax.transData.transform((0, y))[1] for ln in drawn[ax] for y in ln.get_ydata()]
        assert max(ys) <= top - 3, (ax.get_ylabel(), top, max(ys))


def test_latencies_of_microseconds_are_drawn_in_microseconds(tmp_path, figures):
    # ratis-placement's datanode with its Ratis log in memory: a p50 of 9.2 to 9.6 us. In
    # ms its ticks read 0.0025 to 0.0100; in us, 9.6 reads 9.6.
    fig = _latency_figure(tmp_path, figures, [9.6e-6, 9.5e-6, 9.2e-6, 9.2e-6])
    panel = fig.axes[-1]
    assert panel.get_ylabel() == "daemon latency\n(us)"
    (line,) = [ln for ln in panel.get_lines() if ln.get_linestyle() != ":"]
    assert max(line.get_ydata()) == pytest.approx(9.6)


def test_a_lab_run_over_time_says_each_host_and_daemon_with_a_look_of_its_own(tmp_path, figures):
    # The teragen crosscheck lab's post: six hosts, and seven kinds of daemon (HDFS's
    # namenode and datanodes, Ozone's OM, SCM and datanodes, YARN's ResourceManager and
    # NodeManagers), each instance past a kind's first named -1, -2 (as the sampler labels
    # them). Its legend said h1 and "yarn:nodemanager-1 (h5)" with one dark grey solid line,
    # h3 and "ozone:datanode (h1)" with one magenta: 19 colours asked of a palette of 8.
    # Datanodes on five hosts here, past four line styles. Every legend entry is a line of a
    # colour, dash pattern and marker no other entry has, none of them a colour a post gives
    # its cells (tab10, tab20).
    from matplotlib import pyplot as plt
    from matplotlib.colors import to_hex

    where = {
        "hdfs:namenode": ["h1"],
        "hdfs:datanode": ["h1", "h2", "h3", "h4", "h5"],
        "ozone:om": ["h1"],
        "ozone:scm": ["h1"],
        "ozone:datanode": ["h1", "h2", "h3", "h4", "h5"],
        "yarn:resourcemanager": ["h4"],
        "yarn:nodemanager": ["h4", "h5", "h6"],
    }
    rows_ = []
    for i in range(5):
        for node in ("h1", "h2", "h3", "h4", "h5", "h6"):

            def add(resource, metric, value, node=node, t=float(i + 1)):
                rows_.append({"cell": "c", "host": "h4", "repeat": 1, "node": node, "t": t,
                              "seconds": 1.0, "resource": resource, "metric": metric,
                              "value": value})  # fmt: skip

            add("cpu", "busy", 0.5)
            add("disk:vda", "util", 0.2)
            for kind, nodes in where.items():
                if node in nodes:
                    k = nodes.index(node)
                    add(f"process:{kind}{f'-{k}' if k else ''}", "cpu", 0.1)
    got = resource_plots.over_time(pd.DataFrame(rows_), None, "c", "h4", 1, "t", tmp_path / "r")
    assert got is not None
    (fig,) = figures
    (legend,) = fig.legends
    names = [t.get_text() for t in legend.get_texts()]
    assert len(names) == 6 + sum(len(n) for n in where.values()), names
    looks = [
        (to_hex(h.get_color()), h.get_linestyle(), str(h.get_marker()))
        for h in legend.legend_handles
    ]
    pairs = list(zip(names, looks, strict=True))
    repeated = {look: [n for n, lk in pairs if lk == look] for look in looks}
    assert len(set(looks)) == len(looks), {k: v for k, v in repeated.items() if len(v) > 1}
    series = {to_hex(c) for name in ("tab10", "tab20") for c in plt.get_cmap(name).colors}
    assert not {c for c, *_ in looks} & series


def _disk_rows(utils: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    """A run's series whose nodes' disks were ``utils`` busy (node -> device -> one value a
    second), each node's CPU half busy."""
    rows_ = []
    for node, devices in utils.items():
        for dev, values in devices.items():
            for i, v in enumerate(values):
                for resource, metric, value in (("cpu", "busy", 0.5), (f"disk:{dev}", "util", v)):
                    rows_.append({"cell": "c", "host": "h1", "repeat": 1, "node": node,
                                  "t": float(i + 1), "seconds": 1.0, "resource": resource,
                                  "metric": metric, "value": value})  # fmt: skip
    return pd.DataFrame(rows_)


def test_the_disk_panel_names_each_line_s_device_above_it_not_on_it(tmp_path, figures):
    # hcfs's notebook: "vda" was written at its line's end, where the line ended at 100%,
    # on the line; in a lab's figure six hosts' "vda" sat on each other. The busiest device
    # of each host is the one of highest mean utilisation (sdb: 0.9 against vda's 0.2).
    s = _disk_rows(
        {"h1": {"vda": [0.2] * 5, "sdb": [0.9, 0.9, 0.9, 1.0, 1.0]}, "h2": {"vda": [0.3] * 5}}
    )
    assert resource_plots.over_time(s, None, "c", "h1", 1, "t", tmp_path / "r") is not None
    (fig,) = figures
    disk = next(ax for ax in fig.axes if ax.get_ylabel() == "disk util %")
    assert disk.get_title(loc="right") == "busiest device: h1 sdb, h2 vda"
    assert len(disk.texts) == 0  # nothing written inside the panel, over its lines


def test_one_device_name_for_every_host_is_said_once(tmp_path, figures):
    s = _disk_rows({node: {"vda": [0.2, 0.4, 1.0, 1.0]} for node in ("h1", "h2", "h3")})
    assert resource_plots.over_time(s, None, "c", "h1", 1, "t", tmp_path / "r") is not None
    (fig,) = figures
    disk = next(ax for ax in fig.axes if ax.get_ylabel() == "disk util %")
    assert disk.get_title(loc="right") == "busiest device: vda"
