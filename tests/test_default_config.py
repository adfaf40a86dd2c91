"""The README's main command, `snakemake --cores 6 report`, on the shipped default config,
then `snakemake --report report.html`.

The run starts in the background when the session's tests are collected (tests/conftest.py)
and this test, the session's last, waits for it and reads what it made."""

import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import BACKGROUND, ROOT, default_run_dir, env_with_venv, snakemake_bin
from tests.e2e import (
    front_matter,
    image_links,
    interruptible,
    make_checkout,
    notebook_of,
    prose_words,
    sections,
    snakemake,
    stop_run,
)

pytestmark = pytest.mark.e2e


class DefaultRun:
    """``snakemake --cores 6 report`` in a checkout with the shipped config, started now.

    Its exit code is written to ``exit-code`` beside it when it ends, by a thread of the
    process that started it: the test may run in another process (an xdist worker)."""

    def __init__(self, where: Path, cache: Path | None = None) -> None:
        self.work = make_checkout(where, (ROOT / "config" / "config.yaml").read_text())
        env = env_with_venv()
        if cache is not None:
            env["PERFPOST_CACHE"] = str(cache)
        with open(where / LOG, "wb") as out:
            self.proc = subprocess.Popen(
                [snakemake_bin(), "--cores", "6", "report"],
                cwd=self.work,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # its own process group, for Ctrl-C below
                preexec_fn=interruptible,
            )
        threading.Thread(target=self._keep_exit_code, daemon=True).start()

    def _keep_exit_code(self) -> None:
        code = self.proc.wait()
        tmp = self.work / f".{EXIT_CODE}"
        tmp.write_text(f"{code}\n")
        tmp.rename(self.work / EXIT_CODE)

    def abandon(self) -> None:
        """Stop the run as Ctrl-C does (perfpost stops its clusters then), kill it if that
        does not end it."""
        if self.proc.poll() is None:
            stop_run(self.proc)


LOG, EXIT_CODE = "snakemake.log", "exit-code"


def wait_for(work: Path, timeout: float) -> int:
    """The exit code of the run in ``work``, once it has ended."""
    end = time.monotonic() + timeout
    while not (work / EXIT_CODE).exists():
        if time.monotonic() > end:
            raise TimeoutError(f"the default run in {work} did not end in {timeout:.0f} s")
        time.sleep(2)
    return int((work / EXIT_CODE).read_text())


def output(work: Path) -> str:
    return (work / LOG).read_text(errors="replace")[-4000:]


def test_default_config_measures_this_machine_into_posts(request, tmp_path):
    work = default_run_dir(request.config)
    if work is None or not work.is_dir():  # not started for the session: run it here
        BACKGROUND["run"] = run = DefaultRun(tmp_path)  # stopped at the session's end
        work = run.work
    assert wait_for(work, timeout=3600) == 0, output(work)
    # No daemon of the clusters it deployed outlives the run.
    roots = _cluster_roots(work)
    # ozone, ozone-chunk, hdfs and three Ratis placements; a start that failed (Ozone 2.2.0's
    # SCM can race itself: "Metrics source SCMHAMetrics already exists!") is tried once more,
    # as start-2 of the same cluster.
    clusters = {p.parent.name for p in (work / "results" / "clusters").glob("*/start-*/")}
    assert len(clusters) == 6, sorted(clusters)
    assert len(roots) >= 6
    assert [c for c in _cmdlines() if any(r in c for r in roots)] == []
    experiments = ("dd-fsync", "local-reads", "onefile", "hcfs", "ratis-placement", "teragen")
    _posts_a_reader_publishes(work, experiments)
    for experiment in experiments:
        post = notebook_of(work / "reports" / experiment / "index.md")
        assert front_matter(post)["title"]
        assert "Environment" in sections(post)
        links = image_links(post)
        assert links
        assert all((work / "reports" / experiment / link).is_file() for link in links)
        failures = post.split("## Failed cells")[1].split("\n## ")[0]
        if os.geteuid() == 0 or experiment != "local-reads":
            assert "None: every run finished." in failures, f"{experiment}: {failures[:2000]}"
        else:  # the dropped-cache cells cannot be measured without root: listed as skipped
            assert "skipped" in failures, failures[:2000]
    fsync = notebook_of(work / "reports" / "dd-fsync" / "index.md")
    assert "dd (coreutils)" in fsync
    # The comparison is stated, whichever way the runs went, with its interval and n.
    (claim,) = [ln for ln in fsync.splitlines() if ln.startswith("- memdisk vs disk:")]
    # Each side ran 5 to 10 times, as its precision target decided; the table says so.
    # n = candidate/baseline, as the claim names them: memdisk vs disk.
    n_mem, n_disk = map(int, re.search(r"n = (\d+)/(\d+)", claim).groups())
    assert 5 <= n_disk <= 10
    assert 5 <= n_mem <= 10
    for storage, n in (("disk", n_disk), ("memdisk", n_mem)):
        assert re.search(rf"^\| storage={storage} \| {n} \| ", fsync, re.M), storage
    assert "95% CI" in claim
    # Read against the A/A control, the disk measured twice, whose interval the post gives;
    # the runs of the three cells were interleaved, as the post says.
    (control,) = [ln for ln in fsync.splitlines() if ln.startswith("- disk again vs disk, an")]
    assert "an A/A control (one configuration measured twice)" in control
    assert "95% CI" in control
    assert "A/A noise floor" in claim or "interval of the A/A control" in claim
    assert re.search(r"^\| storage=disk-again \| \d+ \| ", fsync, re.M)
    assert "The runs were interleaved" in fsync
    assert "**Drift.**" in fsync
    assert "figures/compare-1.png" in fsync
    onefile = notebook_of(work / "reports" / "onefile" / "index.md")
    assert "Ozone freon/vapor 2.2.0" in onefile
    assert "Every run:" in onefile
    # Its runs are timed (--duration): their progress lines count seconds, so there is no
    # rate over time to draw, and the hcfs post's counted runs have one.
    assert "figures/rate_over_time.png" not in onefile
    assert "figures/rate_over_time.png" in notebook_of(work / "reports" / "hcfs" / "index.md")
    teragen = notebook_of(work / "reports" / "teragen" / "index.md")
    assert "Hadoop 3.4.2" in teragen
    assert "| `storage=hdfs` | localhost | 1 |" in teragen
    # The real systems, named with their own version output, in the posts that ran on them.
    for experiment, systems in (
        ("hcfs", ("### Ozone `ozone`", "### HDFS `hdfs`")),
        ("ratis-placement", ("### Ozone `ratis`",)),
        ("teragen", ("### HDFS `hdfs`", "### Ozone `ozone`", "### Ozone `ozone-chunk`")),
    ):
        post = notebook_of(work / "reports" / experiment / "index.md")
        assert "## System under test" in post
        for heading in systems:
            assert heading in post, f"{experiment}: no {heading}"
        if "### Ozone" in post:
            assert "Ozone version:" in post
            assert "2.2.0(Katmai)" in post
        if "### HDFS" in post:
            assert "Hadoop version:" in post
    # The HCFS table, counted inside freon by the Byteman agent: 400 files of 10240 bytes
    # each way; the default copy buffer (4096) takes 3 write calls per file, the 1-byte one
    # 10,240, and Ozone's and HDFS's streams have no .crc stream inside: the counts are exact.
    hcfs = notebook_of(work / "reports" / "hcfs" / "index.md")
    inside = hcfs.split("### Inside the client", 1)[1].split("Every run:", 1)[0]
    assert "| storage | buffer | runs | write calls | write time | close calls | close time |" in (
        inside
    )
    for storage in ("ozone", "hdfs"):
        for buffer, writes in (("default", "1,200"), ("one-byte", "4,096,000")):
            row = rf"^\| {storage} \| {buffer} \| 5 \| {writes} \| [^|]+ \| 400 \| "
            assert re.search(row, inside, re.M), inside
    # Every cell carries the agent: no cost is claimed, and no `instrument=off` cell named.
    assert "so what it costs is not measured here" in inside
    assert "instrument=off" not in hcfs
    _posts_pass_their_own_checks(work)
    # Ozone 2.2.0's datanode ignores FILE_PER_CHUNK; the post says so rather than compare.
    assert "FILE_PER_CHUNK is not supported by this release" in teragen
    ratis = notebook_of(work / "reports" / "ratis-placement" / "index.md")
    assert ratis.count("hdds.container.ratis.datanode.storage.dir") >= 3
    reads = notebook_of(work / "reports" / "local-reads" / "index.md")
    # 12 cells x 5 repeats; dropped-cache cells are measured as root and skipped otherwise.
    assert "60 runs in all" in reads
    # Every post states its validity facts: one run of perfpost made every run; the drop's
    # evidence where the cache was dropped (18 of the 36 runs, as root); sync's share where
    # sync was timed.
    for experiment in experiments:
        post = notebook_of(work / "reports" / experiment / "index.md")
        assert "## Validity" in post
        assert "**Sessions.** Every run came from one run of perfpost" in post
    if os.geteuid() == 0:
        assert "**Page cache dropped.** The page cache was dropped before 30 runs" in reads
    for experiment in ("dd-fsync", "onefile"):
        post = notebook_of(work / "reports" / experiment / "index.md")
        assert "**`sync` share.** `sync` after each run took " in post
    # Every post says what bound each of its cells, from the hosts' and daemons' telemetry.
    for experiment in experiments:
        post = notebook_of(work / "reports" / experiment / "index.md")
        res = post.split("## Resources", 1)[1].split("\n## ", 1)[0]
        said = [ln for ln in res.splitlines() if ln.startswith("- `")]
        cells = pd.read_csv(work / "results" / experiment / "cells.csv")
        done = cells[cells["status"] == "done"]["cell"].nunique()
        assert len(said) == done, f"{experiment}: {said}"
        # A cell whose step is shorter than two of the 1 s samples (by the tool's own wall
        # time: dd-fsync's 0.2 s, the cached reads' 10 ms) is said to be too short to tell;
        # every other names its bottleneck or says none saturated.
        tidy = pd.read_csv(work / "results" / experiment / "tidy.csv")
        walls = tidy[(tidy["metric"] == "wall_time") & (tidy["status"] == "done")]
        wall = walls.groupby("cell")["value"].median()
        for ln in said:
            cell = ln.split("`")[1]
            if wall[cell] < 2.0:
                assert "cannot say what bound it" in ln, ln
            else:
                assert (
                    "this cell measured" in ln
                    or "no single resource saturated" in ln
                    or "competed" in ln
                ), ln
        if experiment in ("ratis-placement", "hcfs"):  # the posts the issue names
            assert not any("cannot say" in ln for ln in said), said
        # The overview draws the cells the samples resolved, and only them.
        resolved = [ln for ln in said if "cannot say" not in ln]
        assert ("figures/resources.png" in res) == bool(resolved), experiment
    # The Ratis post: the datanode's own Ratis sync latency, per cell and over time.
    ratis_res = ratis.split("## Resources", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"\| ratis:datanode \| localhost \| .*ratis sync p50 ", ratis_res), ratis_res
    figures = json.loads(
        (work / "reports" / "ratis-placement" / "figures" / "figures.json").read_text()
    )
    assert any(f.get("metric") == "resources_over_time" for f in figures)
    # A panel of the cluster's datanode (ratis:datanode) draws its Ratis sync p50.
    over_time = (work / "reports" / "ratis-placement" / "figures" / "resources-1.svg").read_text()
    assert re.search(r"ratis:datanode \([^)]*ratis sync p50\)", over_time)
    # Every finished run went into the history store beside results/, once, and
    # `perfpost history` reads it: one build of everything so far, so nothing is worse.
    for experiment in experiments:
        receipt = json.loads((work / "results" / experiment / "history.json").read_text())
        cells = pd.read_csv(work / "results" / experiment / "cells.csv")
        assert receipt["runs"] == int((cells["status"] == "done").sum()), receipt
    stored = pd.read_parquet(work / "history" / "runs")
    assert set(stored["experiment"]) == set(experiments)
    assert len(set(stored["fingerprint"])) == 1  # one machine
    shown = subprocess.run(
        ["perfpost", "history"], cwd=work, capture_output=True, text=True, env=env_with_venv()
    )
    assert shown.returncode == 0, shown.stdout[-2000:] + shown.stderr[-2000:]
    assert "One build so far" in shown.stdout
    assert list((work / "reports" / "history").glob("*.png"))
    # The README's next step works with what scripts/setup installed.
    html = snakemake(work, "--report", "report.html", timeout=600)
    assert html.returncode == 0, html.stderr[-4000:]
    assert (work / "report.html").stat().st_size > 100_000
    # Each post, its notebook under it, in the report.
    report_text = (work / "report.html").read_text(errors="replace")
    for experiment in experiments:
        assert f"results/{experiment}/post.html" in report_text, experiment


def _cmdlines() -> list[bytes]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    out.append(f.read())
            except OSError:
                continue
    return out


def _cluster_roots(work) -> list[bytes]:
    """The directory prefix of every cluster this checkout started (its id and the tag of
    this checkout), as its daemons' command lines name it."""
    out = []
    for state in (work / "results" / "clusters").glob("*/start-*/state.json"):
        tag = json.loads(state.read_text())["deployment"].get("tag", "")
        out.append(f"perfpost-cluster-{state.parent.parent.name}-{tag}".encode())
    return out


# The comparisons the default posts declare, as their reference posts made them: how many
# groups each has (memdisk vs disk and the disk's A/A control; the two layouts at two chunk
# sizes; Ozone vs HDFS and the two copy buffers, per buffer and per storage; two Ratis
# placements against the disk's).
DECLARED = {
    "dd-fsync": 2,
    "onefile": 2,
    "hcfs": 4,
    "ratis-placement": 2,
    # 6 readers vs 1 per buffer and cache (4), the buffers per readers and cache (6).
    "local-reads": 10,
    # Ozone vs HDFS, and the two chunk layouts (one group each).
    "teragen": 2,
}


def _posts_pass_their_own_checks(work: Path) -> None:
    """No post flags its own clock, and every declared comparison reaches a verdict."""
    import pandas as pd

    for experiment in ("dd-fsync", "local-reads", "onefile", "hcfs", "ratis-placement", "teragen"):
        post = notebook_of(work / "reports" / experiment / "index.md")
        summary = post.split("## Summary", 1)[1].split("\n## ", 1)[0]
        assert "Reporting lag (" not in summary, f"{experiment}: {summary}"
    for experiment in ("onefile", "hcfs", "ratis-placement"):
        tidy = pd.read_csv(work / "results" / experiment / "tidy.csv")
        done = tidy[tidy["status"] == "done"]
        runs = done[["cell", "host", "repeat"]].drop_duplicates()
        window = done[done["metric"] == "rate_source_progress_window"]
        # Every freon run's rate is over its measured phase, none over the whole run.
        assert len(window) == len(runs), f"{experiment}: {len(window)} of {len(runs)} windowed"
        post = notebook_of(work / "reports" / experiment / "index.md")
        assert "**Reporting lag.** Every rate (" in post
    for experiment, groups in DECLARED.items():
        table = pd.read_csv(work / "reports" / experiment / "comparisons.csv")
        assert len(table) == groups, table
        # 5 against 5 runs in a family of two, 4 against 4 alone: each can reach a verdict.
        assert "too few runs to say" not in set(table["verdict"]), table
        assert table["p_min_adjusted"].max() <= 0.05
    # freon's rates were two levels when its once-a-second summary was their clock (1000
    # chunks in 3.05 or 4.06 s: 328 or 246 ops/s); over a measured phase they are not.
    tidy = pd.read_csv(work / "results" / "ratis-placement" / "tidy.csv")
    rates = tidy[(tidy["metric"] == "rate") & (tidy["status"] == "done")]["value"]
    assert rates.round(0).nunique() > len(rates) // 2, sorted(rates)


FIRST_SCREEN = 2000  # characters of a post's body: about 25 lines of a blog's column


def _fmt_rate(v: float) -> str:
    """A rate as the posts write it, three significant digits (worked out here)."""
    return f"{v / 1e9:.3g} GB/s" if v >= 1e9 else f"{v / 1e6:.3g} MB/s"


def _fmt_time(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} us"


def _posts_a_reader_publishes(work: Path, experiments: tuple[str, ...]) -> None:
    """Each default post is one an engineer publishes as it is, with what it must say."""
    for experiment in experiments:
        post = (work / "reports" / experiment / "index.md").read_text()
        assert prose_words(post) < 800, f"{experiment}: {prose_words(post)} words of prose"
        assert sections(post) == ["How it was run", "Results", "Caveats", "Conclusion"]
        body = post.split("---\n", 2)[2]
        assert "95% CI" in body[:FIRST_SCREEN], f"{experiment}: {body[:FIRST_SCREEN]}"
        assert "](notebook.md)" in post
        assert (work / "reports" / experiment / "notebook.md").is_file()
    # teragen: Ozone 2.2.0's datanode ran FILE_PER_BLOCK where FILE_PER_CHUNK was asked; the
    # cell is named by what ran, and the layouts are not compared as if they differed.
    teragen = (work / "reports" / "teragen" / "index.md").read_text()
    assert "| `storage=ozone-chunk (ran FILE_PER_BLOCK, not FILE_PER_CHUNK)` |" in teragen
    assert "FILE_PER_CHUNK against FILE_PER_BLOCK: not compared, `storage=ozone-chunk` ran" in (
        teragen
    )
    # Nor drawn as a comparison: its figure said "black: a difference claimed" beside it.
    drawn = json.loads((work / "reports" / "teragen" / "figures" / "figures.json").read_text())
    assert [f.get("comparison") for f in drawn if f.get("comparison")] == ["Ozone vs HDFS"]
    notebook = notebook_of(work / "reports" / "teragen" / "index.md")
    for text in (teragen, notebook):
        alts = re.findall(r"!\[([^\]]*)\]", text)
        assert not [a for a in alts if "FILE_PER_CHUNK vs FILE_PER_BLOCK" in a], alts
    # The disk: vda reports itself a spinning disk; where its fsync'd writes (dd-fsync) or
    # a datanode's Ratis log syncs on it (ratis-placement) beat what a spinning disk can do,
    # the caveats say so with the runs' own numbers, worked out here from the tables.
    env = json.loads((work / "results" / "dd-fsync" / "env" / "localhost.json").read_text())
    spinning = {d["name"] for d in env["disks"] if d["rotational"]}
    tidy = pd.read_csv(work / "results" / "dd-fsync" / "tidy.csv")
    disk = tidy[
        (tidy["status"] == "done")
        & (tidy["metric"] == "throughput")
        & tidy["storage"].isin(["disk", "disk-again"])
    ]["value"]
    fsync = (work / "reports" / "dd-fsync" / "index.md").read_text()
    caveats = fsync.split("## Caveats", 1)[1].split("\n## ", 1)[0]
    beyond = (disk > 554e6).sum() * 3 >= len(disk)
    # The env step's probe of the disk under the runs' data: dd's own seconds for its
    # synced writes; one each under 2 ms (half a turn at 15,000 rpm) is no platter's.
    probes = [p for p in env.get("sync_probe") or [] if p["disk"] == "vda" and p["seconds"]]
    if "vda" in spinning:
        assert probes, env.get("sync_probe")
    per_write = probes[0]["seconds"] / probes[0]["writes"] if probes else None
    fast = per_write is not None and per_write < 0.002
    if "vda" in spinning and (beyond or fast):
        assert "`vda` on localhost reports itself a spinning disk" in caveats, caveats
        if beyond:
            assert f"at {_fmt_rate(disk.median())} (median of {len(disk)} runs" in caveats
            assert "554 MB/s" in caveats
        if fast:
            assert f"took {_fmt_time(per_write)} each, under the 2 ms" in caveats, caveats
        assert "This machine cannot answer that as it stands" in fsync
    else:
        assert "reports itself a spinning disk" not in caveats
    window = pd.read_csv(work / "results" / "ratis-placement" / "resources-window.csv")
    sync = window[
        (window["status"] == "done")
        & (window["cell"] == "data=disk,ratis=disk")
        & (window["resource"] == "daemon:ratis:datanode")
        & (window["metric"] == "ratis_sync_p50")
    ]["value"]
    ratis = (work / "reports" / "ratis-placement" / "index.md").read_text()
    caveats = ratis.split("## Caveats", 1)[1].split("\n## ", 1)[0]
    if "vda" in spinning and len(sync) and sync.median() < 0.002:
        assert f"synced in {_fmt_time(sync.median())}" in caveats, caveats
        assert "2 ms" in caveats
    # No run measured while a cluster it did not use was starting, up or stopping on its
    # host: from every cluster start's times and every run's own, compared here.
    starts = []
    for state_file in (work / "results" / "clusters").glob("*/start-*/state.json"):
        state = json.loads(state_file.read_text())
        ref = f"{state_file.parent.parent.name}/{state_file.parent.name}"
        hosts = {h for hs in state["deployment"]["spec"]["roles"].values() for h in hs}
        # Noted to the millisecond: a run that began 0.34 s into the second its cluster's
        # stop was noted in (whole seconds then) was no run beside it.
        assert "." in state["stopped"], state["stopped"]
        stopped = pd.Timestamp(state["stopped"]) + pd.Timedelta(milliseconds=1)
        starts.append((ref, hosts, pd.Timestamp(state["started"]), stopped))
    beside = []
    for experiment in experiments:
        cells = pd.read_csv(work / "results" / experiment / "cells.csv")
        assert cells["others_up"].isna().all(), cells["others_up"].dropna()
        for r in cells[cells["status"] == "done"].itertuples():
            mine = set(str(r.clusters).split()) if isinstance(r.clusters, str) else set()
            t0, t1 = pd.Timestamp(r.start), pd.Timestamp(r.end)
            beside += [
                (experiment, r.cell, r.repeat, ref)
                for ref, hosts, a, b in starts
                if ref not in mine and r.host in hosts and a < t1 and t0 < b
            ]
    assert beside == []
    # Each post and its notebook in a Hugo site and a Jekyll site, as perfpost publishes them.
    from tests.test_post_e2e import HUGO_CONFIG, HUGO_LIST, HUGO_SINGLE, JEKYLL_CONFIG

    sites = work.parent / "sites"
    hugo = sites / "hugo"
    (hugo / "content").mkdir(parents=True)
    (hugo / "layouts" / "_default").mkdir(parents=True)
    (hugo / "hugo.toml").write_text(HUGO_CONFIG)
    (hugo / "layouts" / "_default" / "single.html").write_text(HUGO_SINGLE)
    (hugo / "layouts" / "_default" / "list.html").write_text(HUGO_LIST)
    jekyll = sites / "jekyll"
    jekyll.mkdir(parents=True)
    (jekyll / "_config.yml").write_text(JEKYLL_CONFIG)
    (jekyll / "index.md").write_text("---\nlayout: home\n---\n")
    for site, build in (
        (hugo, ["hugo", "--source", str(hugo), "--destination", str(sites / "hugo-out")]),
        (
            jekyll,
            ["jekyll", "build", "--source", str(jekyll), "--destination", str(sites / "j-out")],
        ),
    ):
        published = subprocess.run(
            ["perfpost", "publish", "--site", str(site)],
            cwd=work,
            capture_output=True,
            text=True,
            env=env_with_venv(),
        )
        assert published.returncode == 0, published.stderr
        built = subprocess.run(build, capture_output=True, text=True, timeout=300)
        assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    for out in (sites / "hugo-out", sites / "j-out"):
        for experiment in experiments:
            for page in (
                f"posts/{experiment}/index.html",
                f"posts/{experiment}/notebook/index.html",
            ):
                text = (out / page).read_text()
                for src in re.findall(r'<img [^>]*src="([^"]+)"', text):
                    target = (out / page).parent / src if not src.startswith("/") else out / src[1:]
                    assert target.resolve().is_file(), (out, page, src)
