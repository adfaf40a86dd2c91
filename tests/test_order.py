"""The run order an experiment asks for: the sequences written out by hand, what the config
refuses, the priorities the cell jobs get, and how the post reads the order from the runs'
start times."""

import json

import pandas as pd
import pytest

from perfpost import glue
from perfpost.analysis import runorder
from perfpost.errors import ConfigError
from perfpost.plan import build as pconfig
from perfpost.plan import order

A, B, C = "c=a", "c=b", "c=c"


def test_interleaved_is_abba_rounds():
    # Two cells, four rounds: A B | B A | A B | B A.
    assert order.sequence("interleaved", [A, B], 4) == [
        (A, 1), (B, 1), (B, 2), (A, 2), (A, 3), (B, 3), (B, 4), (A, 4),
    ]  # fmt: skip
    # Three cells: declared order, then reversed.
    assert [c for c, _ in order.sequence("interleaved", [A, B, C], 2)] == [A, B, C, C, B, A]


def test_back_to_back_is_cell_after_cell():
    assert order.sequence("back-to-back", [A, B], 2) == [(A, 1), (A, 2), (B, 1), (B, 2)]


def test_random_rounds_are_each_a_shuffle_and_the_seed_repeats_them():
    seq = order.sequence({"random": 7}, [A, B, C], 50)
    rounds = [seq[i : i + 3] for i in range(0, 150, 3)]
    assert all(sorted(c for c, _ in r) == [A, B, C] for r in rounds)
    assert all({r for _, r in rnd} == {k} for k, rnd in enumerate(rounds, start=1))
    assert len({tuple(c for c, _ in r) for r in rounds}) == 6  # all 3! orders turn up in 50
    assert order.sequence({"random": 7}, [A, B, C], 50) == seq
    assert order.sequence({"random": 8}, [A, B, C], 50) != seq


def test_followed_counts_runs_in_their_planned_place():
    planned = [(A, 1), (B, 1), (B, 2), (A, 2)]
    assert order.followed(planned, planned) == 4
    assert order.followed(planned, [(B, 1), (A, 1), (B, 2), (A, 2)]) == 2
    # A run that never started is left out of both: the rest are still in place.
    assert order.followed(planned, [(A, 1), (B, 2), (A, 2)]) == 3


def exp_config(**over):
    e = {"tool": "dd", "params": {"dir": "/tmp", "bs": "{bs}", "count": 1}, "repeats": 3}
    e["axes"] = {"bs": ["4k", "1M"]}
    return {"experiments": {"e": {**e, **over}}}


def test_the_order_is_checked_with_its_key():
    with pytest.raises(ConfigError, match=r"experiments\.e\.order"):
        pconfig.build_plan(exp_config(order="abba"))
    with pytest.raises(ConfigError, match=r"experiments\.e\.order.*start_together"):
        pconfig.build_plan(exp_config(order="interleaved", start_together=True))


def test_no_order_leaves_the_config_hash_as_it_was():
    # Records made before `order:` existed keep their config hash, so nothing re-runs.
    plain = pconfig.build_plan(exp_config()).experiments["e"]
    assert "order" not in plain.public()
    asked = pconfig.build_plan(exp_config(order="interleaved")).experiments["e"]
    assert asked.public()["order"] == "interleaved"
    assert asked.config_hash() != plain.config_hash()


class WC:
    def __init__(self, experiment, cell, repeat):
        self.experiment, self.cell, self.repeat = experiment, cell, str(repeat)


def test_a_precision_target_s_later_rounds_have_their_places_too():
    precise = exp_config(order="interleaved", repeats={"min": 3, "max": 6, "precision": "5%"})
    plan = pconfig.build_plan(precise)
    priority = glue.cell_priority(plan)
    cells = [c.id for c in plan.experiments["e"].cells]
    # Round 5 (beyond min) is still A then B... reversed: an odd round, declared order.
    assert priority(WC("e", cells[0], 5)) > priority(WC("e", cells[1], 5))
    assert priority(WC("e", cells[1], 4)) > priority(WC("e", cells[0], 4))
    assert priority(WC("e", cells[0], 4)) > priority(WC("e", cells[0], 5))


def test_priorities_put_each_host_s_runs_in_the_planned_order():
    plan = pconfig.build_plan(exp_config(order="interleaved"))
    priority = glue.cell_priority(plan)
    cells = [c.id for c in plan.experiments["e"].cells]
    by_priority = sorted(
        ((c, r) for c in cells for r in (1, 2, 3)),
        key=lambda x: -priority(WC("e", x[0], x[1])),
    )
    assert by_priority == order.sequence("interleaved", cells, 3)
    assert json.loads(glue.experiment_json(plan, "e"))["order_cells"] == cells
    assert glue.cell_priority(pconfig.build_plan(exp_config())) == 0  # unset: as before


def cells_csv(runs):
    t0 = pd.Timestamp("2026-11-27T00:00:00Z")
    return pd.DataFrame(
        [
            {"cell": c, "host": h, "repeat": r, "start": str(t0 + pd.Timedelta(seconds=s))}
            for c, r, h, s in runs
        ]
    )


def test_the_post_says_how_many_runs_came_where_the_plan_put_them():
    exp = {"order": "interleaved", "order_cells": [A, B], "repeats": 2}
    # h1 kept the plan A B B A; on h2 the second round came A B (started in that order).
    runs = [(A, 1, "h1", 0), (B, 1, "h1", 1), (B, 2, "h1", 2), (A, 2, "h1", 3)]
    runs += [(A, 1, "h2", 0), (B, 1, "h2", 1), (A, 2, "h2", 2), (B, 2, "h2", 3)]
    said = runorder.sentence(exp, cells_csv(runs))
    assert "A B B A" in said
    assert "on each of 2 hosts, 6 of the 8 runs came where the plan put them" in said


def test_without_an_order_the_post_counts_the_moves_between_cells():
    runs = [(A, 1, "h1", 0), (A, 2, "h1", 1), (B, 1, "h1", 2), (A, 3, "h1", 3), (B, 2, "h1", 4)]
    said = runorder.sentence({"repeats": 3}, cells_csv(runs))
    assert said.startswith("No order was asked for")
    # A A B A B: three moves; cell after cell would be one.
    assert "the 5 runs moved from one cell to another 3 times (cell after cell: 1)" in said


def test_an_experiment_that_compares_is_interleaved_unless_it_cannot_be():
    compare = [{"baseline": {"bs": "4k"}, "candidate": {"bs": "1M"}}]
    assert pconfig.build_plan(exp_config(compare=compare)).experiments["e"].order == "interleaved"
    # A precision target too: its later rounds take their planned places when they come.
    precise = exp_config(compare=compare, repeats={"min": 3, "max": 9, "precision": "5%"})
    assert pconfig.build_plan(precise).experiments["e"].order == "interleaved"
    # Said otherwise, kept.
    kept = exp_config(compare=compare, order="back-to-back")
    assert pconfig.build_plan(kept).experiments["e"].order == "back-to-back"


def test_what_restarts_cost_is_the_starts_median_time_to_ready():
    starts = [
        {"started": "2026-11-27T04:12:56+0000", "ready": "2026-11-27T04:13:34+0000"},  # 38 s
        {"started": "2026-11-27T04:20:00+0000", "ready": "2026-11-27T04:20:12+0000"},  # 12 s
        {"started": "2026-11-27T04:30:00+0000", "ready": "2026-11-27T04:30:20+0000"},  # 20 s
        {"started": "2026-11-27T04:40:00+0000"},  # never ready: not a cost
    ]
    said = runorder.restart_cost(starts)
    assert "3 starts, median 20 s (from 12 to 38 s) from start to ready" in said
    assert "each 12 s" in runorder.restart_cost(starts[1:2])
    assert runorder.restart_cost([]) == ""


def test_one_kinds_configurations_come_one_after_another_whatever_shares_them():
    # Teragen on YARN with Ozone A, then with Ozone B (an axis), and an HCFS experiment on
    # Ozone A alone declared after it: A must be done before B starts (a configuration is
    # stopped after its last set), and A alone runs before YARN with A, so YARN, which B
    # needs next, is not kept up idle beside it.
    y, a, b = "yarn-1111", "ozone-aaaa", "ozone-bbbb"
    assert order.configuration_order([(y, a), (y, b), (a,)]) == [(a,), (y, a), (y, b)]
    # A set of no Ozone at all comes before the first Ozone's; one kind of one configuration
    # (YARN, HDFS) orders no blocks.
    h = "hdfs-cccc"
    assert order.configuration_order([(y, a), (h,), (y, b)]) == [(h,), (y, a), (y, b)]
    # Sets that share a cluster run side by side: Ozone A's two sets before the HDFS one,
    # so A is not up idle beside it.
    assert order.configuration_order([(y, a), (h,), (a,)]) == [(y, a), (a,), (h,)]
    # Two kinds of two configurations each (a cross product): the first kind's blocks, and
    # within each the second kind's configurations in order.
    h2 = "hdfs-dddd"
    got = order.configuration_order([(a, h), (b, h), (a, h2), (b, h2)])
    assert got == [(a, h), (a, h2), (b, h), (b, h2)]
