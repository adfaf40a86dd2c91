"""Figures as a reader sees them, drawn by the workflow's own step (`perfpost figures`):
the onefile post's rate figure (the reference post's four chunk sizes, each with its chunk
count zipped to it) has one series per layout with the zipped chunk count travelling with
the size, legends lie inside the image, the note names only what
is drawn, and rates spanning decades get a log axis."""

import json
import math

import pandas as pd
import pytest
import yaml

from perfpost import cli
from perfpost.analysis import plots, tidy
from perfpost.glue import experiment_json
from perfpost.plan.build import build_plan
from tests.conftest import ROOT

# Rates (chunk writes per second) from the reference post "Writing one file per chunks vs.
# one file per blocks", two repeats per layout and chunk size, for the default config's cells.
ONEFILE_RATES = {
    ("FILE_PER_CHUNK", "1k"): (124198.8, 116521.0),
    ("FILE_PER_CHUNK", "10k"): (65106.3, 65901.6),
    ("FILE_PER_CHUNK", "100k"): (9746.2, 9723.2),
    ("FILE_PER_CHUNK", "1M"): (976.7, 979.6),
    ("FILE_PER_BLOCK", "1k"): (329674.5, 395181.4),
    ("FILE_PER_BLOCK", "10k"): (93419.5, 93696.4),
    ("FILE_PER_BLOCK", "100k"): (9718.6, 9722.7),
    ("FILE_PER_BLOCK", "1M"): (974.7, 975.9),
}


def _records(plan, name, value_of, metric="rate", unit="1/s"):
    exp = plan.experiments[name]
    return [
        {
            "experiment": name,
            "cell": cell.id,
            "host": "localhost",
            "repeat": repeat,
            "labels": cell.label_map,
            "tool": exp.tool,
            "status": "done",
            "attempt": 1,
            "exit_code": 0,
            "metrics": [{"name": metric, "value": value_of(cell.label_map, repeat), "unit": unit}],
        }
        for cell in exp.cells
        for repeat in range(1, exp.repeats + 1)
    ]


def _draw(tmp_path, plan, name, records, series=None):
    """Tables and figures for ``records``, by the workflow's steps' own code."""
    axes = list(plan.experiments[name].axes)
    out = tmp_path / name
    df = tidy.from_records(records, axes)
    tidy.write(df, out / "tidy.csv", out / "tidy.parquet", out / "tidy.schema.json", axes)
    argv = ["figures", "--experiment", experiment_json(plan, name)]
    argv += ["--tidy", str(out / "tidy.parquet"), "--out-dir", str(out / "figures")]
    if series is not None:
        series.to_csv(out / "series.csv", index=False)
        argv += ["--series", str(out / "series.csv")]
    args = cli.build_parser().parse_args(argv)
    assert args.func(args) == 0
    return json.loads((out / "figures" / "figures.json").read_text())


def _onefile_plan(compare: bool = False, repeats: int = 2):
    """The default config's onefile experiment at the reference post's shape: four chunk
    sizes, a chunk count zipped to each, two repeats; its comparison (on the rate) if
    ``compare``."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    onefile = cfg["experiments"]["onefile"]
    onefile["params"]["options"] = {"n": "{chunks}", "s": "{size}", "t": 2, "l": "{layout}"}
    onefile["axes"] = {
        "layout": ["FILE_PER_CHUNK", "FILE_PER_BLOCK"],
        "size": {"1k": 1024, "10k": 10240, "100k": 102400, "1M": 1048576},
        "chunks": [20000, 10000, 2500, 300],
    }
    onefile["zip"] = [["size", "chunks"]]
    onefile["repeats"] = repeats
    if compare:
        for c in onefile["compare"]:
            c["metric"] = "rate"
    else:
        onefile.pop("compare", None)
    return build_plan({"experiments": {"onefile": onefile}})


def _onefile(tmp_path, figures, series=None):
    plan = _onefile_plan()
    records = _records(
        plan,
        "onefile",
        lambda labels, repeat: ONEFILE_RATES[labels["layout"], labels["size"]][repeat - 1],
    )
    _draw(tmp_path, plan, "onefile", records, series)
    return next(f for f in figures if f.get_suptitle().endswith(": Rate"))


def _legend_texts(fig) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def _note(fig) -> str:
    """What the figure says about its marks: legend titles and entries, and free text."""
    titles = [legend.get_title().get_text() for legend in fig.legends]
    free = [t.get_text() for t in fig.texts if t.get_text() != fig.get_suptitle()]
    return " ".join([*titles, *_legend_texts(fig), *free])


def _joining_lines(fig) -> list:
    return [line for ax in fig.axes for line in ax.lines if len(line.get_xdata()) > 1]


def test_the_onefile_rate_figure_has_one_series_per_layout(tmp_path, figures):
    fig = _onefile(tmp_path, figures)
    (ax,) = fig.axes
    # chunks is zipped with size: it changes with it, so it is not a series of its own.
    assert _legend_texts(fig) == ["layout=FILE_PER_CHUNK", "layout=FILE_PER_BLOCK"]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "1k\nchunks=20000",
        "10k\nchunks=10000",
        "100k\nchunks=2500",
        "1M\nchunks=300",
    ]
    # Each layout's line joins its four medians; every run is a point.
    assert sorted(len(line.get_xdata()) for line in _joining_lines(fig)) == [4, 4]
    runs = sum(len(c.get_offsets()) for c in ax.collections if c.get_gid() == "runs")
    assert runs == 16


def test_series_at_one_size_on_a_log_axis_are_spread_as_on_a_linear_one(tmp_path, figures):
    """Two series a point of each at every size: apart by the share of the gap to the next
    size a linear axis gives them (0.6 over two series: 0.3), here of a decade (1k to 10k),
    so their runs and medians do not sit one on the other."""
    fig = _onefile(tmp_path, figures)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    (runs,) = [c for c in ax.collections if c.get_gid() == "runs"]
    xs = sorted({float(x) for x, _ in runs.get_offsets()})
    assert len(xs) == 8  # four sizes, two layouts
    for left, right in zip(xs[::2], xs[1::2], strict=True):
        assert math.log10(right / left) == pytest.approx(0.3, rel=1e-6)


def test_the_onefile_rates_get_a_log_axis(tmp_path, figures):
    fig = _onefile(tmp_path, figures)
    (ax,) = fig.axes
    # 975 to 395,181 chunks/s: 2.6 decades; linear, everything under 10,000 is flat.
    assert ax.get_yscale() == "log"
    assert "log scale" in ax.get_ylabel()


def test_a_comparison_of_groups_decades_apart_gets_a_log_axis(tmp_path, figures):
    """The default onefile post compares the layouts at 1 KiB and 1 MiB chunks: on a linear
    axis from zero the 1 MiB runs (975 chunks/s here) were a line along the bottom under the
    1 KiB ones (up to 395,181)."""
    plan = _onefile_plan(compare=True)
    records = _records(
        plan,
        "onefile",
        lambda labels, repeat: ONEFILE_RATES[labels["layout"], labels["size"]][repeat - 1],
    )
    _draw(tmp_path, plan, "onefile", records)
    fig = next(f for f in figures if "one file per block vs" in f.get_suptitle())
    left = fig.axes[0]
    assert left.get_yscale() == "log"
    assert "log scale" in left.get_ylabel()
    low, high = left.get_ylim()
    assert low < 974.7  # every run inside
    assert high > 395181.4


def _inside(fig) -> list[str]:
    """Legends that reach outside the saved image, by their rendered geometry."""
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    assert legends
    out = []
    for legend in legends:
        ext = legend.get_window_extent(renderer)
        if ext.x0 < box.x0 or ext.y0 < box.y0 or ext.x1 > box.x1 or ext.y1 > box.y1:
            out.append(f"{fig.get_suptitle()!r}: legend {ext} outside the figure {box}")
    return out


def test_legends_lie_inside_the_image(tmp_path, figures):
    cfg = {
        "experiments": {
            "long": {
                "tool": "dd",
                "repeats": 2,
                "params": {"dir": "{storage}", "count": 8},
                "axes": {
                    "storage": {
                        "memdisk-on-the-first-socket": "/dev/shm/a",
                        "nvme-scratch-volume-behind-lvm": "/var/tmp/b",
                        "spinning-disk-in-a-raid6-array": "/var/tmp/c",
                    },
                    "writeback": ["throttled-by-cgroup", "default-ratio", "none"],
                    "conv": ["fsync", "fdatasync"],
                    "bs": ["4k", "1M"],
                },
                "plot": {"x": "storage"},
            }
        }
    }
    plan = build_plan(cfg)
    records = _records(
        plan, "long", lambda labels, r: 1e8 * (1 + r / 10), metric="throughput", unit="B/s"
    )
    _draw(tmp_path, plan, "long", records)
    cells = [c.id for c in _onefile_plan().experiments["onefile"].cells]
    series = pd.DataFrame(
        [
            {"experiment": "onefile", "cell": cell, "host": "localhost", "repeat": 1}
            | {"series": "chunk-write", "t": t, "completed": t, "total": 10, "rate": 1000.0 * t}
            for cell in cells
            for t in range(1, 6)
        ]
    )
    _onefile(tmp_path, figures, series)
    # 12 series named by three axes each; in the rate over time, the 8 cells as 2 layouts
    # (colours, as in the rate's figure) and 4 sizes with their zipped chunk counts (styles).
    assert any(len(_legend_texts(f)) == 12 for f in figures)
    assert any(len(_legend_texts(f)) == 2 + 4 for f in figures)
    outside = [msg for fig in figures for msg in _inside(fig)]
    assert not outside, outside


def _dd_throughput(tmp_path, name, axes, rate, repeats=2, **experiment):
    """A dd experiment over ``axes`` drawn by the workflow's own steps, each run's throughput
    ``rate(labels, repeat)`` in B/s."""
    exp = {"tool": "dd", "repeats": repeats, "axes": axes, **experiment}
    exp.setdefault("params", {"dir": "{storage}", "bs": "4k", "count": 8})
    plan = build_plan({"experiments": {name: exp}})
    records = _records(plan, name, rate, metric="throughput", unit="B/s")
    _draw(tmp_path, plan, name, records)


def test_the_note_names_lines_only_where_lines_are_drawn(tmp_path, figures):
    axes = {"storage": {"shm": "/dev/shm/a", "disk": "/var/tmp/b"}, "conv": ["fsync", "none"]}
    _dd_throughput(tmp_path, "cat", axes, lambda labels, r: 1e8 * r, plot={"x": "storage"})
    _onefile(tmp_path, figures)
    assert len(figures) >= 2
    for fig in figures:
        says = "line" in _note(fig)
        assert says == bool(_joining_lines(fig)), (fig.get_suptitle(), _note(fig))


def _one_axis(tmp_path, figures, rates):
    _dd_throughput(
        tmp_path,
        "r",
        {"jobs": list(rates)},
        lambda labels, r: rates[int(labels["jobs"])] * (1 + r / 100),
        params={"dir": "/dev/shm/a", "bs": "4k", "count": 8},
    )
    return next(f for f in figures if f.get_suptitle().endswith(": Throughput"))


def test_values_spanning_three_decades_get_a_log_axis(tmp_path, figures):
    # 100 kB/s to 100 MB/s: three decades.
    fig = _one_axis(tmp_path, figures, {1: 1e5, 2: 1e6, 4: 1e7, 8: 1e8})
    (ax,) = fig.axes
    assert ax.get_yscale() == "log"
    assert "log scale" in ax.get_ylabel()
    low, high = ax.get_ylim()
    assert low < 1e5 / 1e6  # every run inside, in MB/s
    assert high > 1e8 / 1e6


def test_values_within_a_decade_keep_a_linear_axis_from_zero(tmp_path, figures):
    fig = _one_axis(tmp_path, figures, {1: 2e8, 2: 3e8, 4: 5e8, 8: 9e8})
    (ax,) = fig.axes
    assert ax.get_yscale() == "linear"
    assert ax.get_ylim()[0] == 0
    assert "log" not in ax.get_ylabel()


def test_series_zipped_together_make_one_series_per_pair():
    labels = {"bs": ["4k", "1M"], "count": [2048, 8], "storage": ["shm", "disk"]}
    series = plots.series_axes(labels, "storage", None, [["bs", "count"]])
    assert series == ["bs", "count"]
    colours = plots.series_colours(labels, series, [["bs", "count"]])
    assert list(colours) == [("4k", "2048"), ("1M", "8")]


def test_long_titles_lie_inside_the_image(tmp_path, figures):
    """The hcfs post's rate-over-time figure had the first line of its title cut off at the
    top of the image; a title two lines long must wrap and stay inside too."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    shipped = cfg["experiments"]["hcfs"]["title"]
    for title in (shipped, f"{shipped}, second run on the lab's spare machine after the upgrade"):
        cfg["experiments"]["hcfs"]["title"] = title
        plan = build_plan(cfg)
        records = _records(plan, "hcfs", lambda labels, repeat: 10.0 + repeat)
        series = pd.DataFrame(
            [
                {"experiment": "hcfs", "cell": c.id, "host": "localhost", "repeat": 1}
                | {"series": "dfsg", "t": t, "completed": t, "total": 5, "rate": 5.0 * t}
                for c in plan.experiments["hcfs"].cells
                for t in range(1, 6)
            ]
        )
        figures.clear()
        short = []
        _draw(tmp_path / str(len(title)), plan, "hcfs", records, series)
        assert len(figures) >= 2  # the rate and the rate over time
        for fig in figures:
            fig.canvas.draw()
            text = fig._suptitle
            ext, box = text.get_window_extent(fig.canvas.get_renderer()), fig.bbox
            inside = box.x0 <= ext.x0 and ext.x1 <= box.x1 and box.y0 <= ext.y0 and ext.y1 <= box.y1
            assert inside, f"{text.get_text()!r}: {ext} outside {box}"
            # Every word, in order; a comparison's figure names its own contrast after the
            # title's subject, not the title's list of them (hcfs has two comparisons).
            got = " ".join(text.get_text().split())
            if not got.startswith(title):
                short.append(got)
        head = title.split(": ", 1)[0]
        assert sorted(short) == [
            f"{head}: 1-byte vs default copy buffer",
            f"{head}: Ozone vs HDFS",
        ]
    # The long one took two lines.
    whole = [f for f in figures if " ".join(f.get_suptitle().split()) not in short]
    assert len(whole) >= 2
    assert all("\n" in f.get_suptitle() for f in whole)


# dd's own MB/s of six runs per side of an A/A control (the disk measured twice) in a default
# run: close together, so matplotlib's margin (5% of their range) left the highest at the frame.
AA_RATES = {"disk": [693, 693, 697, 682, 727, 700], "disk-again": [708, 658, 684, 669, 715, 731]}


def _dots_outside(fig) -> list[tuple[float, float]]:
    """Run dots, of every panel, not wholly inside their panel: by the rendered geometry of
    each dot (its centre and its radius, from its marker area in points squared)."""
    from matplotlib.collections import PathCollection

    fig.canvas.draw()
    out = []
    for ax in fig.axes:
        box = ax.get_window_extent()
        for coll in ax.collections:
            if not isinstance(coll, PathCollection) or len(coll.get_offsets()) == 0:
                continue
            radius = (coll.get_sizes()[0] ** 0.5) / 2 * fig.dpi / 72
            for x, y in ax.transData.transform(coll.get_offsets()):
                if y + radius > box.y1 or y - radius < box.y0 - 0.5:
                    out.append(tuple(ax.transData.inverted().transform((x, y))))
    return out


def test_runs_close_together_on_an_axis_from_zero_are_drawn_whole(tmp_path, figures):
    aa = {
        "name": "disk again vs disk",
        "baseline": {"storage": "disk"},
        "candidate": {"storage": "disk-again"},
        "metric": "throughput",
        "control": True,
    }
    _dd_throughput(
        tmp_path,
        "aa",
        {"storage": {"disk": "/var/tmp/a", "disk-again": "/var/tmp/a"}},
        lambda labels, r: AA_RATES[labels["storage"]][r - 1] * 1e6,
        repeats=6,
        params={"dir": "{storage}", "bs": "10k", "count": 10000},
        compare=[aa],
    )
    metric = next(f for f in figures if f.get_suptitle().endswith(": Throughput"))
    control = next(f for f in figures if "disk again vs disk" in f.get_suptitle())
    for fig in (metric, control):
        top = fig.axes[0]
        assert top.get_yscale() == "linear"
        assert top.get_ylim()[0] == 0
        assert _dots_outside(fig) == []


# -- one meaning per colour, legends off the data, the scale the data need -------------------


def _ratis_figures(tmp_path, figures):
    """The default config's ratis-placement experiment (data x ratis, three placements, its
    two comparisons) with made-up rates: log in memory fastest, all on disk slowest."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    plan = build_plan(
        {
            "experiments": {"ratis": cfg["experiments"]["ratis-placement"]},
            "clusters": {"ratis": cfg["clusters"]["ratis"]},
        }
    )
    rates = {("memdisk", "memdisk"): 130.0, ("disk", "memdisk"): 110.0, ("disk", "disk"): 80.0}
    records = _records(plan, "ratis", lambda labels, r: rates[labels["data"], labels["ratis"]] + r)
    cells = [c.id for c in plan.experiments["ratis"].cells]
    series = pd.DataFrame(
        [
            {"experiment": "ratis", "cell": cell, "host": "localhost", "repeat": 1}
            | {"series": "dcg", "t": t, "completed": 10 * t, "total": 50, "rate": 10.0 * t}
            for cell in cells
            for t in range(1, 6)
        ]
    )
    drawn = _draw(tmp_path, plan, "ratis", records, series)
    by_title = {f.get_suptitle(): f for f in figures}
    return drawn, by_title


def _rgb(c) -> tuple:
    from matplotlib.colors import to_rgb

    return tuple(round(x, 3) for x in to_rgb(c))


def _point_colours(ax, y) -> set:
    """The colours of the scatter points drawn at height ``y`` (a run's value)."""
    out = set()
    for coll in ax.collections:
        offsets = coll.get_offsets()
        colours = coll.get_facecolors()
        for i, (_, yy) in enumerate(offsets):
            if abs(yy - y) < 1e-6:
                out.add(_rgb(colours[i % len(colours)]))
    return out


def test_a_colour_means_one_series_in_every_figure_of_a_post(tmp_path, figures):
    _, by_title = _ratis_figures(tmp_path, figures)
    rate = next(f for t, f in by_title.items() if t.endswith(": Rate"))
    compare = [f for t, f in by_title.items() if "vs" in t.split(": ")[-1]]
    assert len(compare) == 2
    # In the rate's figure ratis=disk (all on disk, run 1: 81 ops/s) has one colour, and
    # ratis=memdisk (log in memory on the disk, run 1: 111) another.
    (ax,) = rate.axes
    on_disk, in_memory = _point_colours(ax, 81.0), _point_colours(ax, 111.0)
    assert len(on_disk) == 1
    assert len(in_memory) == 1
    assert on_disk != in_memory
    # Both comparison figures draw each side in its series' colour: the same runs, the
    # same colours (the Ratis log on the disk was the candidate's orange in one figure, and
    # blue, the baseline's, in the other).
    for fig in compare:
        top = fig.axes[0]
        assert _point_colours(top, 81.0) == on_disk
        got = _point_colours(top, 111.0) or _point_colours(top, 131.0)
        assert got <= in_memory | _point_colours(ax, 131.0)
        assert top.get_legend() is None  # no legend over the runs


def test_no_colour_is_said_twice_in_a_legend(tmp_path, figures):
    _ratis_figures(tmp_path, figures)
    for fig in figures:
        for legend in fig.legends:
            coloured = [
                _rgb(h.get_color())
                for h in legend.legend_handles
                if hasattr(h, "get_color") and _rgb(h.get_color()) != _rgb("0.35")
            ]
            assert len(coloured) == len(set(coloured)), (fig.get_suptitle(), coloured)


def test_two_sizes_are_two_categories_not_a_line(tmp_path, figures):
    # The default onefile's sizes, 1k and 1M: nothing was measured between them.
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    plan = build_plan(
        {"experiments": {"onefile": {**cfg["experiments"]["onefile"], "compare": []}}}
    )
    records = _records(plan, "onefile", lambda labels, r: 1000.0 + r)
    _draw(tmp_path, plan, "onefile", records)
    rate = next(f for f in figures if f.get_suptitle().endswith(": Rate"))
    assert _joining_lines(rate) == []
    assert "lines join" not in _note(rate)


def _layouts_far_apart(tmp_path, figures, spread: float):
    """The default run's onefile: one file per block 16 times one file per chunk's rate at
    1 KiB chunks, within a few percent at 1 MiB; the runs of a cell ``spread`` apart (a
    fraction of its rate). The comparison's figure."""
    plan = _onefile_plan(compare=True, repeats=5)  # 5 against 5: an interval per group
    rate = {
        "FILE_PER_CHUNK": {"1k": 1000.0, "1M": 300.0},
        "FILE_PER_BLOCK": {"1k": 16000.0, "1M": 303.0},
    }
    records = _records(
        plan,
        "onefile",
        lambda labels, r: rate[labels["layout"]].get(labels["size"], 500.0) * (1 + spread * r),
    )
    _draw(tmp_path, plan, "onefile", records)
    return next(f for f in figures if "one file per block vs" in f.get_suptitle())


def test_changes_far_apart_keep_the_small_ones_interval_visible(tmp_path, figures):
    fig = _layouts_far_apart(tmp_path, figures, 0.02)
    bottom = fig.axes[1]
    assert bottom.get_yscale() == "log"
    # The 1M group's interval, a few percent, still spans pixels: on the linear axis to
    # +1,500% it was a dot.
    fig.canvas.draw()
    from matplotlib.collections import LineCollection

    bars = [c for c in bottom.collections if isinstance(c, LineCollection)]
    heights = [
        abs(bottom.transData.transform(s[1])[1] - bottom.transData.transform(s[0])[1])
        for c in bars
        for s in c.get_segments()
    ]
    assert min(heights) > 2


def test_one_unit_for_a_metric_across_a_posts_figures(tmp_path, figures):
    # Runs from 0.9 GB/s to 3 GB/s, their median 2 GB/s: the metric reads GB/s; the
    # comparison of the two slower cells, all under 1 GB/s, reads GB/s too, not MB/s.
    cfg = {
        "experiments": {
            "u": {
                "title": "units",
                "tool": "dd",
                "params": {"dir": "/tmp", "bs": "{bs}", "count": 10},
                "axes": {"bs": ["4k", "64k", "1M", "4M"]},
                "repeats": 3,
                "compare": [
                    {"name": "64k vs 4k", "baseline": {"bs": "4k"}, "candidate": {"bs": "64k"}}
                ],
            }
        }
    }
    plan = build_plan(cfg)
    value = {"4k": 0.9e9, "64k": 0.95e9, "1M": 2.0e9, "4M": 3.0e9}
    records = _records(
        plan, "u", lambda labels, r: value[labels["bs"]] + r * 1e6, "throughput", "B/s"
    )
    _draw(tmp_path, plan, "u", records)
    units = {f.get_suptitle(): f.axes[0].get_ylabel() for f in figures if f.axes}
    assert all("GB/s" in label for label in units.values()), units


def test_an_axis_of_one_value_names_no_series(tmp_path, figures):
    """The default hcfs has `instrument: {on: [output]}`, one value: the post names its cells
    `storage=ozone, buffer=default`, and its figures' legends said `buffer=default,
    instrument=on` for every series. Only the axes that vary name a series."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    plan = build_plan(cfg)
    assert len(plan.experiments["hcfs"].axes["instrument"]) == 1
    records = _records(plan, "hcfs", lambda labels, repeat: 10.0 + repeat)
    _draw(tmp_path, plan, "hcfs", records)
    said = [
        t.get_text()
        for fig in figures
        for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]
        if legend is not None
        for t in legend.get_texts()
    ]
    assert {"buffer=default", "buffer=one-byte"} <= set(said), said
    assert not [t for t in said if "instrument" in t], said
    # The cells' names, as the post gives them.
    df = tidy.from_records(records, list(plan.experiments["hcfs"].axes))
    names = tidy.cell_names(df, list(plan.experiments["hcfs"].axes))
    assert names["storage=ozone,buffer=default,instrument=on"] == "storage=ozone, buffer=default"


@pytest.mark.parametrize(
    ("title", "name", "want"),
    [
        # The shipped onefile post's figure read "Chunk writes: one file per chunk vs one
        # file per block: one file per block vs one file per chunk".
        (
            "Chunk writes: one file per chunk vs one file per block",
            "one file per block vs one file per chunk",
            "Chunk writes: one file per block vs one file per chunk",
        ),
        (
            "Concurrent reads from local disk: readers, buffer size and page cache",
            "6 readers vs 1",
            "Concurrent reads from local disk: 6 readers vs 1",
        ),
        # No list of contrasts to drop: the whole title leads.
        (
            "teragen of 10 MB into HDFS and Ozone, and Ozone's two chunk layouts",
            "Ozone vs HDFS",
            "teragen of 10 MB into HDFS and Ozone, and Ozone's two chunk layouts: Ozone vs HDFS",
        ),
    ],
)
def test_a_comparison_figure_names_its_comparison_once(title, name, want):
    from perfpost.analysis.comparison_plot import figure_title

    assert figure_title(title, name) == want
    assert figure_title(title, name, control=True) == want + " (A/A control: the noise floor)"


def test_every_interval_of_the_changes_panel_stands_clear_of_its_frame(tmp_path, figures):
    # The default run's onefile (one file per block ~16x faster at 1 KiB): the 1 KiB
    # interval's upper cap sat on the panel's top edge, where a reader cannot tell it from
    # the frame. Every cap and estimate is drawn at least 3 pixels inside the panel.
    fig = _layouts_far_apart(tmp_path, figures, 0.2)
    bottom = fig.axes[1]
    fig.canvas.draw()
    from matplotlib.collections import LineCollection

    box = bottom.get_window_extent()
    ys = [
        bottom.transData.transform(p)[1]
        for c in bottom.collections
        if isinstance(c, LineCollection)
        for s in c.get_segments()
        for p in s
    ]
    assert ys
    assert all(box.y0 + 3 <= y <= box.y1 - 3 for y in ys), (box, sorted(ys))
