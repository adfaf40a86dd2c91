"""The history: its store (append-only, machines never mixed), change points over builds,
and `perfpost history`'s verdict and exit code.

Expected values: PELT's segmentation against every segmentation enumerated; false-alarm and
detection rates measured over many seeded histories (the counts are in each test); the step
a test put into its data; bytes of files on disk.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfpost.cli import main
from perfpost.errors import ConfigError, PerfpostError
from perfpost.history import changes, store, view

ENV = {
    "host": "h1",
    "cpu": {"model": "AMD EPYC", "sockets": 1, "cores": 2, "threads": 2},
    "memory_bytes": 8 * 2**30,
    "disks": [{"name": "vda", "model": "virtio", "size_bytes": 10**11, "rotational": True}],
    "kernel": "Linux 6.1.0 x86_64",
}


def history(rng, builds, step_at=None, step=0.8, session=0.03, within=0.01, runs=5):
    """Each build's runs: a level (its session's offset, lognormal) times run noise."""
    out = []
    for b in range(builds):
        level = 1e9 * (step if step_at is not None and b >= step_at else 1.0)
        level *= math.exp(rng.normal(0, session))
        out.append(list(level * np.exp(rng.normal(0, within, runs))))
    return out


def names(n):
    return [f"build-{i + 1}" for i in range(n)]


# ----------------------------------------------------------------------------- PELT


def _cost(y, starts, sigma, beta):
    bounds = [0, *starts, len(y)]
    total = 0.0
    for a, b in itertools.pairwise(bounds):
        seg = np.asarray(y[a:b])
        total += float(((seg - seg.mean()) ** 2).sum()) / sigma**2
    return total + beta * len(starts)


@pytest.mark.parametrize("n", range(2, 10))
def test_pelt_finds_the_least_penalised_cost_of_every_segmentation(n):
    # 2^(n-1) segmentations enumerated, 20 series of each length, three penalties.
    rng = np.random.default_rng(n)
    for _ in range(20):
        y = rng.normal(0, 1, n) + np.repeat(rng.normal(0, 3, 3), math.ceil(n / 3))[:n]
        for beta in (0.5, 4.0, 20.0):
            best = min(
                _cost(y, list(c), 1.0, beta)
                for k in range(n)
                for c in itertools.combinations(range(1, n), k)
            )
            got = changes.pelt(y, 1.0, beta)
            assert _cost(y, got, 1.0, beta) == pytest.approx(best, abs=1e-9)


# ----------------------------------------------------------------------------- rates


def _bound(rate, n):
    return rate + 3 * math.sqrt(rate * (1 - rate) / n)


@pytest.mark.parametrize("builds", [4, 5, 7, 10, 16, 30])
def test_a_history_with_no_change_shows_one_in_at_most_5_percent(builds):
    # 1,000 seeded histories per size: session offsets of 3% and runs within 1% of them.
    rng = np.random.default_rng(1000 + builds)
    seeds = 1000
    alarms = sum(
        bool(changes.analyse(names(builds), history(rng, builds), "B/s").changes)
        for _ in range(seeds)
    )
    assert alarms / seeds <= _bound(changes.FALSE_ALARM, seeds), alarms


@pytest.mark.parametrize("builds", [2, 3])
def test_two_or_three_builds_judge_their_runs_exactly(builds):
    # 2,000 seeded histories without session offsets: the exact test holds its 5%.
    rng = np.random.default_rng(builds)
    seeds = 2000
    alarms = sum(
        bool(changes.analyse(names(builds), history(rng, builds, session=0), "B/s").changes)
        for _ in range(seeds)
    )
    assert alarms / seeds <= _bound(changes.FALSE_ALARM, seeds), alarms
    a = changes.analyse(names(builds), history(rng, builds, session=0), "B/s")
    assert a.penalty is None
    assert "Mann-Whitney" in a.note


def test_a_step_is_found_at_its_build_and_nowhere_else():
    # 500 seeded histories of 8 builds, 20% slower from build 6 (index 5).
    rng = np.random.default_rng(7)
    exact, sizes = 0, []
    for _ in range(500):
        a = changes.analyse(names(8), history(rng, 8, step_at=5), "B/s")
        if [c.index for c in a.changes] == [5]:
            exact += 1
            c = a.changes[0]
            assert c.direction == "worse"
            assert a.newest_worse
            sizes.append(c.change)
    assert exact >= 475, exact
    # The size of the step, estimated from segments of 5 and 3 builds: centred on -20%.
    assert float(np.median(sizes)) == pytest.approx(-0.2, abs=0.01)


def test_the_newest_build_alone_worse_is_caught():
    # 300 seeded histories of 10 builds whose last is 20% slower, 3% session noise: a
    # single build against the floor (about 4 sigma at 10 builds), caught in at least 80%.
    rng = np.random.default_rng(11)
    caught = sum(
        changes.analyse(names(10), history(rng, 10, step_at=9), "B/s").newest_worse
        for _ in range(300)
    )
    assert caught >= 240, caught


def test_which_way_is_worse_follows_the_unit():
    rng = np.random.default_rng(5)
    runs = history(rng, 8, step_at=4, step=1.25, session=0.01)
    faster = changes.analyse(names(8), runs, "B/s")  # throughput up: better
    assert [c.direction for c in faster.changes] == ["better"]
    assert not faster.newest_worse
    slower = changes.analyse(names(8), runs, "s")  # time up: worse
    assert [c.direction for c in slower.changes] == ["worse"]
    assert slower.newest_worse
    assert changes.analyse(names(8), runs, "count").changes[0].direction == "higher"


def test_a_regression_that_was_fixed_does_not_fail_the_newest():
    rng = np.random.default_rng(9)
    runs = history(rng, 12, step_at=4, session=0.01)
    for b in range(8, 12):  # back to the old speed from build 9
        runs[b] = [v / 0.8 for v in runs[b]]
    a = changes.analyse(names(12), runs, "B/s")
    assert [(c.index, c.direction) for c in a.changes] == [(4, "worse"), (8, "better")]
    assert not a.newest_worse


def test_the_penalty_between_listed_sizes_and_beyond():
    assert changes.penalty(10) == changes.PENALTIES[10]
    low, high = changes.PENALTIES[40], changes.PENALTIES[48]
    assert min(low, high) <= changes.penalty(44) <= max(low, high)
    assert changes.penalty(1024) == pytest.approx(changes.PENALTIES[256] + 2 * math.log(4))
    with pytest.raises(ValueError, match="fewer than 4"):
        changes.penalty(3)


def test_the_noise_floor_is_the_smallest_newest_step_pelt_would_flag():
    # Medians 1, e^0.1, 1, e^0.1, ...: |differences| all 0.1, sigma = 1.4826 * 0.1 / sqrt(2).
    runs = [[math.exp(0.1 * (i % 2))] for i in range(6)]
    a = changes.analyse(names(6), runs, "B/s")
    sigma = 1.4826 * 0.1 / math.sqrt(2)
    assert a.sigma == pytest.approx(sigma)
    step = sigma * math.sqrt(changes.PENALTIES[6] * 6 / 5)
    assert a.floor == pytest.approx(math.expm1(step))
    assert a.changes == []
    # A seventh build just past the floor is flagged, just short of it is not (the newest
    # alone against the rest: (B-1)/B * delta^2 / sigma^2 against beta, by hand).
    rest = float(np.mean([0.1 * (i % 2) for i in range(6)]))
    beta7 = changes.PENALTIES[7]
    for factor, flagged in ((1.05, True), (0.95, False)):
        runs7 = [*runs, [math.exp(rest - factor * sigma * math.sqrt(beta7 * 7 / 6))]]
        b = changes.analyse(names(7), runs7, "B/s")
        # sigma from the seven medians' differences stays 1.4826 * 0.1 / sqrt(2) (the
        # median of |d| is still 0.1), so the threshold is the one computed here.
        assert b.sigma == pytest.approx(sigma)
        assert ([c.index for c in b.changes] == [6]) is flagged


# ----------------------------------------------------------------------------- store


def tidy_and_records(cell="storage=disk", host="h1", repeats=3, value=1e9, session="s1", t0=0):
    rows, records = [], []
    for r in range(1, repeats + 1):
        start = f"2026-11-27T{t0 // 3600:02d}:00:{r:02d}+00:00"
        rec = {
            "experiment": "dd-fsync",
            "cell": cell,
            "host": host,
            "repeat": r,
            "attempt": 1,
            "status": "done",
            "session": session,
            "start": start,
            "tool_version": "dd (coreutils) 9.1",
            "measurement": "m1",
            "perfpost_version": "0.1.0",
        }
        records.append((f"results/x/r{r}/record.json", rec))
        for metric, unit, v in (("throughput", "B/s", value), ("exit_code", "count", 0)):
            rows.append(
                {
                    "experiment": "dd-fsync",
                    "cell": cell,
                    "host": host,
                    "repeat": r,
                    "attempt": 1,
                    "tool": "dd",
                    "metric": metric,
                    "value": v,
                    "unit": unit,
                    "status": "done",
                }
            )
    return pd.DataFrame(rows), records


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_store_only_ever_gains_files(tmp_path):
    s = tmp_path / "history"
    df, recs = tidy_and_records()
    first = store.add(s, store.rows(df, recs, {"h1": ENV}, "throughput", tmp_path, {}))
    assert first["added_runs"] == 3
    assert first["added_rows"] == 3
    before = {p.name: _sha(p) for p in (s / "runs").iterdir()}
    again = store.add(s, store.rows(df, recs, {"h1": ENV}, "throughput", tmp_path, {}))
    assert again == {"added_runs": 0, "added_rows": 0, "file": None}
    df2, recs2 = tidy_and_records(repeats=5)  # repeats 4 and 5 are new
    third = store.add(s, store.rows(df2, recs2, {"h1": ENV}, "throughput", tmp_path, {}))
    assert third["added_runs"] == 2
    after = {p.name: _sha(p) for p in (s / "runs").iterdir()}
    assert {k: after[k] for k in before} == before  # the first file, byte for byte
    assert len(after) == 2
    read = store.read(s)
    assert sorted(read["repeat"]) == [1, 2, 3, 4, 5]
    assert json.loads((s / "schema.json").read_text())["schema_version"] == 1


def test_machines_are_never_mixed_in_one_series(tmp_path):
    s = tmp_path / "history"
    bigger = {**ENV, "memory_bytes": 16 * 2**30}
    assert store.fingerprint(bigger) != store.fingerprint(ENV)
    assert store.fingerprint({**ENV, "hostname": "other"}) == store.fingerprint(ENV)
    for session, env in (("s1", ENV), ("s2", bigger)):
        df, recs = tidy_and_records(session=session, t0=3600 if session == "s2" else 0)
        store.add(s, store.rows(df, recs, {"h1": env}, "throughput", tmp_path, {}))
    found = view.series(view.select(store.read(s)))
    assert len(found) == 2
    assert {x.key["fingerprint"] for x in found} == {
        store.fingerprint(ENV),
        store.fingerprint(bigger),
    }
    assert "16.0 GiB" in " ".join(x.machine for x in found)


def test_the_build_a_run_tested(tmp_path):
    rec = {"tool_version": "dd (coreutils) 9.1"}
    assert store.build_of(rec, tmp_path, {})["build"] == "dd (coreutils) 9.1"
    given = store.build_of(
        rec, tmp_path, {"PERFPOST_BUILD": "nightly-7", "PERFPOST_REVISION": "abc1234"}
    )
    assert given == {"build": "nightly-7", "revision": "abc1234", "build_from": "given"}
    # A cluster's version command's own words (Ozone 2.2.0's, as the deployment kept it).
    state = tmp_path / "clusters" / "ozone-1" / "start-2"
    state.mkdir(parents=True)
    version = (
        "2.2.0(Katmai)\n\nSource code repository git@github.com:apache/ozone.git"
        " -r 95bda680b952d164706dc0b8debbcad805b6a32c\nCompiled with protoc 3.25.8"
    )
    dep = {"version": version, "spec": {"build": "/src/ozone-2.3.0-SNAPSHOT.tar.gz"}}
    (state / "state.json").write_text(json.dumps({"deployment": dep}))
    rec = {"clusters": [{"id": "ozone-1", "kind": "ozone", "version": "2.2.0", "start": 2}]}
    got = store.build_of(rec, tmp_path, {})
    assert got == {
        "build": "ozone 2.2.0 (ozone-2.3.0-SNAPSHOT.tar.gz)",
        "revision": "95bda680b952d164706dc0b8debbcad805b6a32c",
        "build_from": "clusters",
    }


def test_a_store_of_another_schema_is_named(tmp_path):
    s = tmp_path / "history"
    (s / "runs").mkdir(parents=True)
    (s / "schema.json").write_text(json.dumps({"schema_version": 99}))
    with pytest.raises(PerfpostError, match=r"schema.json: history schema version 99"):
        store.read(s)


# ----------------------------------------------------------------------------- the command


def _store_of_builds(tmp_path, speeds):
    """A store with one session per build, added in build order; each build's medians."""
    s = tmp_path / "history"
    rng = np.random.default_rng(3)
    medians = []
    for i, speed in enumerate(speeds):
        df, recs = tidy_and_records(repeats=5, session=f"s{i}", t0=3600 * i)
        values = speed * np.exp(rng.normal(0, 0.01, 5))
        df.loc[df["metric"] == "throughput", "value"] = values
        medians.append(float(np.median(values)))
        for _, r in recs:
            r["tool_version"] = f"dd build-{i + 1}"
        store.add(s, store.rows(df, recs, {"h1": ENV}, "throughput", tmp_path, {}))
    return s, medians


def _step(medians, at):
    """The step at ``at``: the ratio of the segments' geometric means of build medians."""
    before, after = np.log(medians[:at]), np.log(medians[at:])
    return f"{math.expm1(after.mean() - before.mean()) * 100:+.1f}%"


def test_history_exits_1_when_the_newest_build_is_worse(tmp_path, capsys):
    s, medians = _store_of_builds(tmp_path, [1e9, 1.01e9, 0.99e9, 1e9, 0.8e9, 0.81e9])
    out = tmp_path / "report"
    assert main(["history", "--store", str(s), "--out", str(out)]) == 1
    text = capsys.readouterr()
    assert f"at **dd build-5**: {_step(medians, 4)} (worse" in text.out
    assert text.out.count("**change ") == 1
    assert "worse at the newest point: dd-fsync, storage=disk on h1: Throughput" in text.err
    pngs = list(out.glob("*.png"))
    assert len(pngs) == 1
    assert pngs[0].stat().st_size > 10_000
    assert (out / "history.md").read_text().count("![") == 1


def test_history_exits_0_when_nothing_got_worse(tmp_path, capsys):
    s, medians = _store_of_builds(tmp_path, [1e9, 1.01e9, 0.99e9, 1e9, 1.2e9])
    assert main(["history", "--store", str(s), "--out", str(tmp_path / "r")]) == 0
    assert f"at **dd build-5**: {_step(medians, 4)} (better" in capsys.readouterr().out


def test_history_without_a_store_says_where_it_looked(tmp_path, capsys):
    assert main(["history", "--store", str(tmp_path / "none")]) == 2
    assert f"{tmp_path / 'none'}: no history here" in capsys.readouterr().err


def test_tick_labels_keep_what_tells_builds_apart():
    assert view.tick_labels(["dd (coreutils) 9.1", "dd (coreutils) 9.2"]) == (
        "dd (coreutils)",
        ["9.1", "9.2"],
    )
    shared, ticks = view.tick_labels(["ozone 2.2.0", "ozone 2.3.0-SNAPSHOT (ozone-a1b2c3d4.tgz)"])
    assert shared == "ozone"
    assert ticks[0] == "2.2.0"
    assert len(ticks[1]) == 24
    assert ticks[1].endswith("a1b2c3d4.tgz)")  # the end, where builds differ, is kept
    assert view.tick_labels(["a", "b"]) == ("", ["a", "b"])


def test_history_false_keeps_none_and_a_path_is_kept_as_given(tmp_path):
    from perfpost.plan.build import build_plan

    exp = {"e": {"tool": "dd", "params": {"dir": str(tmp_path), "bs": "4k", "count": 1}}}
    assert build_plan({"experiments": exp}).history == "history"
    assert build_plan({"experiments": exp, "history": False}).history is None
    assert build_plan({"experiments": exp, "history": "/srv/h"}).history == "/srv/h"
    with pytest.raises(ConfigError, match=r"history"):
        build_plan({"experiments": exp, "history": 7})


def test_an_addition_with_the_history_off_writes_its_receipt_alone(tmp_path, capsys):
    df, _ = tidy_and_records()
    (tmp_path / "tidy.csv").write_text(df.assign(**{"bs": "4k"}).to_csv(index=False))
    cells = pd.DataFrame({"record": [], "status": []})
    (tmp_path / "cells.csv").write_text(cells.to_csv(index=False))
    exp = json.dumps({"name": "dd-fsync", "tool": "dd", "compare": []})
    receipt = tmp_path / "history.json"
    argv = ["history-add", "--experiment", exp, "--tidy", str(tmp_path / "tidy.csv")]
    argv += ["--cells", str(tmp_path / "cells.csv"), "--store", "", "--out", str(receipt)]
    assert main(argv) == 0
    assert json.loads(receipt.read_text())["store"] is None
    assert "history: off" in capsys.readouterr().out
    assert not (tmp_path / "history").exists()
