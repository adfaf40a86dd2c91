"""Flight recordings' hottest methods, from a JVM whose hot method the test wrote: a class
that spends a second in one method (``Burn.spin``) and exits. JFR's own execution samples,
counted by the JDK's ``jfr`` tool, must put that method on top."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perfpost.instrument import jfr

BURN = """
public class Burn {
    static double spin(long until) {
        double x = 0;
        while (System.nanoTime() < until) {
            for (int i = 0; i < 1000; i++) { x += Math.sqrt(x + i); }
        }
        return x;
    }
    public static void main(String[] a) {
        System.out.println(spin(System.nanoTime() + 1_500_000_000L));
    }
}
"""


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    if not (shutil.which("javac") and shutil.which("jfr")):
        pytest.skip("needs a JDK (javac, jfr): scripts/setup installs one")
    d = tmp_path_factory.mktemp("jfr")
    (d / "Burn.java").write_text(BURN)
    subprocess.run(["javac", "Burn.java"], cwd=d, check=True)
    out = d / "client.jfr"
    subprocess.run(
        ["java", jfr.client_option(str(out)), "-cp", str(d), "Burn"],
        cwd=d,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


def test_the_method_that_burnt_the_cpu_is_on_top(recording: Path):
    got = jfr.hottest(recording)
    # The profile settings sample every 10 ms (20 ms by default): a 1.5 s spin gives dozens.
    assert got["samples"] >= 20, got
    (method, n), *_ = got["top"]
    assert method == "Burn.spin", got["top"]
    assert n / got["samples"] >= 0.5


def test_settings_read_an_experiments_profile_key():
    assert jfr.settings(True) == {"client": True, "daemons": []}
    assert jfr.settings({"daemons": ["datanode"], "client": False}) == {
        "client": False,
        "daemons": ["datanode"],
    }
    assert jfr.settings(None) == {}
    assert jfr.settings(False) == {}
