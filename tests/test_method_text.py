"""The test method says what the commands do: conv=fsync is one fsync after all writes
(coreutils: "physically write output file data before finishing"), oflag=dsync a
synchronous write each time (open(2): O_DSYNC)."""

from __future__ import annotations

from pathlib import Path

import yaml

from perfpost.tools import dd
from tests.conftest import ROOT


def method(**params) -> str:
    return " ".join(dd.describe({"params": {"mode": "write", **params}, "axes": {}}))


def test_conv_fsync_is_one_flush_after_the_last_write():
    text = method(bs="10k", count=10000, conv="fsync", dir="/d")
    assert "one fsync after the last write" in text
    assert "each write" not in text


def test_oflag_dsync_makes_each_write_wait_for_the_device():
    text = method(bs="4k", count=10, oflag=["dsync"], dir="/d")
    assert "each write waits until its data reach the device" in text


def test_the_default_experiment_describes_what_dd_fsync_does():
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    exp = config["experiments"]["dd-fsync"]
    assert exp["params"]["conv"] == "fsync"
    assert "oflag" not in exp["params"]
    text = " ".join(exp["description"].split())
    assert "one fsync after the last write" in text
    assert "must reach the device" not in text  # what oflag=dsync would do, not conv=fsync
    # 10,000 x 10 KiB (dd's 10k is 10240 bytes) = 102,400,000 bytes.
    assert "10,000 blocks of 10 KiB (102 MB)" in text
    assert exp["params"]["count"] == 10000
    assert exp["params"]["bs"] == "10k"


def test_snakemake_report_needs_only_the_main_install():
    """`snakemake --report` stops with "Python package pygments must be installed" without
    pygments, which Snakemake does not require: perfpost must, outside the test extras."""
    from importlib.metadata import requires

    import snakemake.report.html_reporter as html

    source = Path(html.__file__).read_text()
    assert "pygments must be installed" in source
    plain = [r for r in requires("perfpost") or [] if "extra ==" not in r]
    assert any(r.lower().startswith("pygments") for r in plain), plain


def test_a_read_cell_whose_dir_is_an_axis_template_is_described():
    # "{where}" is the axis's value in each cell: the text names the template as written,
    # and braces in it are text, not a format field (they once raised KeyError: 'where').
    params = {"mode": "read", "dir": "{where}", "bs": "1M", "file_size": "64M", "readers": 3}
    text = " ".join(dd.describe({"params": params, "axes": {"where": {"a": "/x"}}}))
    assert "one `64M` file per reader under `{where}`" in text
    assert "starts `3` dd readers at once" in text
