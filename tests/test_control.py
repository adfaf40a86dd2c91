"""A/A controls: one configuration measured twice is the noise floor a comparison's claim is
read against. The claims' numbers here are the comparisons' own (their CSV), the rule is
checked on them: a change inside the control's 95% interval is not claimed, one outside is."""

import pandas as pd
import pytest

from perfpost.analysis import compare, stats
from perfpost.errors import ConfigError
from perfpost.plan.build import build_plan

EXP = {
    "axes": {"storage": ["disk", "disk-again", "fast"]},
    "compare": [
        {"name": "A/A", "baseline": {"storage": "disk"}, "candidate": {"storage": "disk-again"}},
        {"name": "fast vs disk", "baseline": {"storage": "disk"}, "candidate": {"storage": "fast"}},
    ],
}


def tidy(values: dict[str, list[float]]) -> pd.DataFrame:
    rows = [
        {
            "experiment": "e",
            "cell": f"storage={s}",
            "host": "h",
            "repeat": i,
            "storage": s,
            "metric": "throughput",
            "value": v,
            "unit": "B/s",
            "status": "done",
            "attempt": 1,
        }
        for s, vs in values.items()
        for i, v in enumerate(vs, start=1)
    ]
    return pd.DataFrame(rows)


def rows_for(values, control=True):
    exp = {**EXP, "compare": [dict(c) for c in EXP["compare"]]}
    exp["compare"][0]["control"] = control
    return compare.experiment_comparisons(tidy(values), exp, ["throughput"])


# Ten runs a side. disk: 100.0 .. 100.9; disk-again, the same command measured again: 80 ..
# 125, so the A/A interval is wide; fast: 105.0 .. 105.9, every run above every disk run.
DISK = [100 + i / 10 for i in range(10)]
AGAIN = [80.0, 85, 90, 95, 100, 105, 110, 115, 120, 125]
FAST = [105 + i / 10 for i in range(10)]


def test_a_claim_inside_the_controls_interval_is_not_claimed():
    rows = rows_for({"disk": DISK, "disk-again": AGAIN, "fast": FAST})
    control, claim = rows
    assert control.control
    assert not control.result.significant
    low, high = control.result.ci_low, control.result.ci_high
    # On its own the claim stands (complete separation, p = 2 / C(20, 10)) ...
    alone = rows_for({"disk": DISK, "disk-again": AGAIN, "fast": FAST}, control=False)[1]
    assert alone.result.verdict == "better"
    # ... but its change (its own Hodges-Lehmann estimate, about +5%) is inside the A/A
    # interval, so with the control it is not a claim.
    assert low <= claim.result.change <= high
    assert claim.result.verdict == stats.NOISE_FLOOR
    said = compare.sentence(claim)
    assert "inside the 95% interval of the A/A control" in said
    assert "not claimed" in said
    assert "an A/A control (one configuration measured twice)" in compare.sentence(control)
    assert "the noise floor" in compare.sentence(control)


def test_a_claim_beyond_the_noise_floor_stands_and_says_so():
    fast = [v * 2 for v in DISK]  # +100%: beyond any interval 80 .. 125 gives
    rows = rows_for({"disk": DISK, "disk-again": AGAIN, "fast": fast})
    control, claim = rows
    assert claim.result.change > control.result.ci_high
    assert claim.result.verdict == "better"
    assert "beyond the A/A noise floor" in compare.sentence(claim)
    records = compare.as_records(rows)
    assert [r["control"] for r in records] == [True, False]


def test_without_control_the_same_runs_are_compared_as_before():
    plain = rows_for({"disk": DISK, "disk-again": AGAIN, "fast": FAST}, control=False)
    assert plain[1].result.verdict != stats.NOISE_FLOOR
    assert plain[1].floor is None


def test_a_control_must_run_one_command_twice():
    config = {
        "experiments": {
            "e": {
                "tool": "dd",
                "params": {"dir": "{storage}", "bs": "4k", "count": 1},
                "axes": {"storage": {"disk": "/var/tmp/a", "disk-again": "/var/tmp/b"}},
                "compare": [
                    {
                        "baseline": {"storage": "disk"},
                        "candidate": {"storage": "disk-again"},
                        "control": True,
                    }
                ],
            }
        }
    }
    with pytest.raises(ConfigError, match=r"compare\[0\]\.control.*differ in params dir"):
        build_plan(config)
    config["experiments"]["e"]["axes"]["storage"]["disk-again"] = "/var/tmp/a"
    build_plan(config)  # the same directory: one command, twice
