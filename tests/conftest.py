"""Shared fixtures: the repository root, real dd logs, and a real localhost."""

from __future__ import annotations

import os
import shutil
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests import quickjava

ROOT = Path(__file__).resolve().parents[1]
DD_LOGS = ROOT / "tests" / "data" / "dd"
BIN = Path(sys.executable).parent


@pytest.fixture
def dd_log():
    return read_dd_log


def read_dd_log(name: str) -> str:
    # Bytes, not read_text(): universal newlines would turn dd's "\r" redraws into "\n".
    return (DD_LOGS / name).read_bytes().decode()


@pytest.fixture
def localhost():
    from perfpost.run.hosts import LocalHost

    return LocalHost()


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A directory for dd targets, removed by pytest."""
    d = tmp_path / "target"
    d.mkdir()
    return d


@pytest.fixture(scope="module")
def host_dir():
    """A tool's ``dir`` for a module's cells: one path this machine and every testbed host
    see (/var/tmp is not private to the hosts), which the hosts' login user may write.
    Removed afterwards: perfpost leaves a configured ``dir`` in place, as it should."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="perfpost-test-", dir="/var/tmp"))
    d.chmod(0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def snakemake_bin() -> str:
    exe = BIN / "snakemake"
    return str(exe) if exe.exists() else shutil.which("snakemake") or "snakemake"


def env_with_venv() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.fixture(scope="session")
def testbed(tmp_path_factory):
    """Three real sshd hosts (network namespaces as root, loopback ports otherwise)."""
    from tests import testbed as tb

    bed = tb.start(3, tmp_path_factory.mktemp("testbed"), quick_java=True)
    yield bed
    bed.stop()


def host_spec(bed, name: str, **over) -> dict:
    return bed.spec(name, **over)


def put_on_host(bed, name: str, files: dict[str, str], executable: bool = True) -> None:
    """Write ``files`` (path -> text) on a testbed host over SSH: the hosts share no path
    with this machine, so a test's shim reaches them as a user's files would."""
    import shlex

    from perfpost.run.remote import RemoteHost
    from perfpost.shell import write_files_script

    host = RemoteHost(host_spec(bed, name))
    try:
        script = write_files_script(files, private=False)
        if executable:
            script += "chmod 755 " + " ".join(shlex.quote(p) for p in files) + "\n"
        got = host.run(script, 60)
        assert got.exit_code == 0, got.stderr
    finally:
        host.close()


@pytest.fixture(scope="session")
def tool_cache(request):
    """An empty tool cache, as on a new machine: runtimes are provisioned from Maven Central.
    Testbed hosts never see it: perfpost delivers what they run over SSH. One for the
    session: under xdist its workers share it (the controller names it and removes it at the
    end), so each runtime is resolved once, not once a worker; provisionings into it take
    turns (perfpost.provision)."""
    cache = Path(_session_value(request.config, "tool_cache"))
    cache.mkdir(mode=0o755, exist_ok=True)
    cache.chmod(0o755)
    return cache


@pytest.fixture(scope="session")
def ozone_cache(tool_cache):
    """freon/vapor provisioned into the empty cache."""
    from perfpost import provision
    from perfpost.tools import freon

    launcher = provision.install(
        freon.RUNTIME, "2.2.0", str(tool_cache), str(tool_cache / "provision.log")
    )
    return tool_cache, launcher


@pytest.fixture(scope="session")
def hdfs_cache(ozone_cache):
    """The session's tool cache with HDFS 3.4.2 provisioned beside freon (the cells' client)."""
    from perfpost import provision
    from perfpost.clusters import hdfs

    cache, _ = ozone_cache
    provision.install(hdfs.RUNTIME, "3.4.2", str(cache), str(cache / "hdfs.log"))
    return cache


@pytest.fixture(scope="session")
def single_yarn(tool_cache, tmp_path_factory):
    """A real single-node YARN 3.4.2 (ResourceManager + NodeManager) on loopback ports."""
    from types import SimpleNamespace

    from perfpost import provision
    from perfpost.clusters import base, lifecycle
    from perfpost.clusters.yarn import RUNTIME
    from perfpost.run.hosts import open_host
    from tests.e2e import QUICK_DAEMONS

    launcher = provision.install(RUNTIME, "3.4.2", str(tool_cache), str(tool_cache / "yarn.log"))
    root = tmp_path_factory.mktemp("yarn")
    spec = base.ClusterSpec(
        name="yarn",
        kind="yarn",
        version="3.4.2",
        roles={"resourcemanager": ["localhost"], "nodemanager": ["localhost"]},
        dir=str(root),
        jvm={"all": QUICK_DAEMONS},
    )
    home = {"localhost": str(launcher.resolve().parents[1])}
    with lifecycle.running(spec, {"localhost": {"name": "localhost"}}, home, open_host) as dep:
        yield SimpleNamespace(
            rm_url=dep.values["url"],
            rm_address=dep.values["rm"],
            client_conf=lifecycle.write_client_conf(dep, root / "client-conf"),
            deployment=dep,
        )


# The fault suite's table (tests/test_faults.py): fault, how it was injected, what was kept.
# A test appends its rows to FAULTS; they travel in its report (a worker's, under xdist) to
# the process that prints the table, which keeps them in REPORTED.
FAULTS: list[tuple[str, str, str]] = []
REPORTED: list[tuple[str, str, str]] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    while FAULTS:
        outcome.get_result().user_properties.append(("fault", FAULTS.pop(0)))


def pytest_runtest_logreport(report) -> None:
    REPORTED.extend(tuple(v) for k, v in report.user_properties if k == "fault")


def pytest_terminal_summary(terminalreporter) -> None:
    if not REPORTED:
        return
    tr = terminalreporter
    tr.section("faults injected and what perfpost kept")
    widths = [max(len(r[i]) for r in [("fault", "injected", "outcome"), *REPORTED]) for i in (0, 1)]
    tr.write_line(f"{'fault':<{widths[0]}} | {'injected':<{widths[1]}} | outcome")
    tr.write_line(f"{'-' * widths[0]}-+-{'-' * widths[1]}-+-{'-' * 7}")
    for fault, how, kept in REPORTED:
        tr.write_line(f"{fault:<{widths[0]}} | {how:<{widths[1]}} | {kept}")


@pytest.fixture
def figures(monkeypatch):
    """Every figure perfpost closes after saving it, kept open for inspection."""
    import matplotlib.pyplot as plt

    kept, close = [], plt.close
    monkeypatch.setattr(plt, "close", kept.append)
    yield kept
    for fig in kept:
        close(fig)


# Where the suite's CPU goes, for whoever trims it: with PERFPOST_TEST_CPU=<dir>, each process
# of the session (the controller, whose child is the default run, and each worker) moves into
# a cpuacct cgroup of its own, and each worker writes every test's CPU-seconds (setup, call and
# teardown: its daemons, hosts and JVMs included, all children of the worker), with when it
# started and ended (Unix seconds: which tests ran while the machine idled), to
# <dir>/<worker>.tsv; the controller writes the default run's to <dir>/controller.tsv. What
# a worker's tests left in its group as it ends is named in <dir>/<worker>.stragglers.
CPU_DIR = os.environ.get("PERFPOST_TEST_CPU")
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
CPU_GROUP = pytest.StashKey[Path]()
GROUP_PREFIX = "perfpost-test-"  # a session's groups: <prefix><worker or controller>-<pid>


def _cpu_group(name: str) -> Path | None:
    if not CPU_DIR or not CPUACCT.is_dir() or os.geteuid() != 0:
        return None
    group = CPUACCT / f"{GROUP_PREFIX}{name}-{os.getpid()}"
    group.mkdir(exist_ok=True)
    (group / "cgroup.procs").write_text(str(os.getpid()))
    return group


def _cpu_seconds(group: Path) -> float:
    return int((group / "cpuacct.usage").read_text()) / 1e9


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    group = item.config.stash.get(CPU_GROUP, None)
    before = _cpu_seconds(group) if group else 0.0
    started = time.time()
    yield
    if group:
        spent = _cpu_seconds(group) - before
        with open(Path(CPU_DIR) / f"{group.name}.tsv", "a") as out:
            out.write(f"{spent:.1f}\t{item.nodeid}\t{started:.0f}\t{time.time():.0f}\n")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session) -> None:
    if CPU_DIR:
        Path(CPU_DIR).mkdir(parents=True, exist_ok=True)
        config = session.config
        name = config.workerinput["workerid"] if _is_worker(config) else "controller"
        group = _cpu_group(name)
        if group:
            config.stash[CPU_GROUP] = group


def _cpu_profile_end(config) -> None:
    group = config.stash.get(CPU_GROUP, None)
    if group is None:
        return
    if not _is_worker(config):  # the controller's group holds the default run
        with open(Path(CPU_DIR) / "controller.tsv", "a") as out:
            out.write(f"{_cpu_seconds(group):.1f}\tcontroller and the default run\n")
    release_group(group, CPUACCT, Path(CPU_DIR) / f"{group.name}.stragglers")


def release_group(group: Path, root: Path, note: Path) -> list[str]:
    """This process back to ``root``'s group, and with it every process its tests left in
    ``group`` (a host's sshd still ending, a daemon being stopped), so that the group is empty
    and goes now: one a straggler held past the controller's wait was left behind after a
    whole suite. The stragglers' command lines go to ``note``, for whoever hunts leaks (most
    end in moments, as a run's watcher does once its run has; one that stays is a leak, and
    moving it only ends its counting here); returns them."""
    from perfpost.run import lifeline

    (root / "cgroup.procs").write_text(str(os.getpid()))
    left = []
    for pid in (group / "cgroup.procs").read_text().split():
        cmd = (lifeline._read(int(pid), "cmdline") or b"").replace(b"\0", b" ").decode()
        try:
            (root / "cgroup.procs").write_text(pid)
        except OSError:
            continue  # gone meanwhile
        left.append(f"{pid}\t{cmd.strip()}")
    if left:
        note.write_text("".join(f"{line}\n" for line in left))
    try:
        group.rmdir()
    except OSError:
        pass
    return left


def _running(pid: str, parent: int | None = None) -> bool:
    """Alive and not a zombie (an exited worker its parent has not reaped holds no group),
    and, given ``parent``, a child of it; read as perfpost's own lifeline reads /proc."""
    from perfpost.run import lifeline

    fields = lifeline._stat(int(pid))
    return fields is not None and fields[0] != b"Z" and (parent is None or int(fields[1]) == parent)


def remove_stale_groups(root: Path, wait: float = 0.0) -> list[Path]:
    """Remove the session groups under ``root`` whose process is gone and that hold nothing
    now: a worker's group stays when a process of its tests (a host's sshd, a daemon being
    stopped) was still in it as the worker ended, and a killed session leaves all of its.
    Returns what was removed. Within ``wait`` seconds in all, a worker of this session (a
    child of this process) still exiting is waited for, and a group still holding a process
    is tried again; past it, such a group stays."""
    end = time.monotonic() + wait
    gone = []
    for group in root.glob(f"{GROUP_PREFIX}*-*"):
        pid = group.name.rsplit("-", 1)[1]
        if not pid.isdigit():
            continue
        while _running(pid, parent=os.getpid()) and time.monotonic() < end:
            time.sleep(0.1)
        if _running(pid):
            continue
        while True:
            try:
                group.rmdir()
            except OSError:
                if time.monotonic() >= end:
                    break
                time.sleep(0.1)
            else:
                gone.append(group)
                break
    return gone


# The README's main command on the shipped config (tests/test_default_config.py) takes about
# twenty minutes, most of them JVMs starting and clusters becoming ready. It starts once the
# session's tests are collected and runs beside them; its test, moved to the end, checks what
# it made. The run's own cells still run one at a time on its host: only the machine is shared.
# Under xdist (the README's command runs the suite on workers) the controller starts it, so
# that it outlives whichever worker finishes first; the test, on any worker, reads its exit
# code from the file the run leaves (tests/test_default_config.DefaultRun).
BACKGROUND: dict[str, object] = {}
DEFAULT_TEST = "test_default_config.py"


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def default_run_dir(config) -> Path | None:
    """Where the session's background default run works, if one was started for it."""
    where = config.workerinput.get("default_run") if _is_worker(config) else None
    where = where or BACKGROUND.get("dir")
    return Path(where) if where else None


# What the process that runs the session (the controller, under xdist) decides once for all
# its workers: the default run's directory, the shared tool cache's.
SESSION: dict[str, str] = {}


def _session_value(config, key: str) -> str:
    return config.workerinput[key] if _is_worker(config) else SESSION[key]


# The default run is the session's longest chain (its clusters run one after another), and
# the rest of the suite keeps both cores busy beside it: with every test at the same priority
# it took 67 of a 68-minute session on 2 cores, three to five times its runs' time alone. The
# workers yield to it (nice 10 against its 0: about a tenth of the CPU weight each), so the
# chain runs at nearly its own speed and the other tests use what it leaves.
WORKER_NICE = 10
# Nice counts only between processes of one autogroup: with the kernel's autogroups on (as on
# Debian), CPU is first shared evenly between sessions, and every daemon, sshd host and run
# here is a session of its own (setsid), so nice 10 changed nothing (a default run took 37
# minutes for 29 of its 154 runs beside the suite). While the session's default run goes on,
# autogroups are off, and restored when the session ends.
AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")


def _autogroups_off() -> None:
    try:
        was = AUTOGROUP.read_text().strip()
        if was != "0":
            AUTOGROUP.write_text("0\n")
            SESSION["autogroup"] = was
    except OSError:  # not root, or no such knob: nice still orders the workers' own work
        pass


def _autogroups_restore() -> None:
    was = SESSION.pop("autogroup", None)
    if was is not None:
        try:
            AUTOGROUP.write_text(was + "\n")
        except OSError:
            pass


# A session's tool cache (half a gigabyte once Ozone and Hadoop are in) and quick JDK.
LEFTOVERS = ("/var/tmp/perfpost-test-cache-", f"/var/tmp/{quickjava.NAME}-")


def reap_leftovers(root: Path = Path("/var/tmp")) -> list[Path]:
    """Remove what sessions killed before their end (SIGKILL, a CI limit) left in ``root``:
    each such directory names the pytest that made it (``<prefix><pid>-<hex>``), and one
    whose pytest is gone is removed; an older one, named without it, once a day old.
    Returns what was removed."""
    import re
    import time

    gone = []
    for prefix in (Path(p).name for p in LEFTOVERS):
        for d in root.glob(prefix + "*"):
            m = re.fullmatch(re.escape(prefix) + r"(?:(\d+)-)?[0-9a-f]{12}", d.name)
            if not m or not d.is_dir():
                continue
            if m.group(1) is None:
                stale = time.time() - d.stat().st_mtime > 86400
            else:
                try:
                    cmd = Path(f"/proc/{m.group(1)}/cmdline").read_bytes()
                except OSError:
                    cmd = b""
                stale = b"pytest" not in cmd
            if stale:
                shutil.rmtree(d, ignore_errors=True)
                gone.append(d)
    return gone


@pytest.hookimpl(trylast=True)  # after the tmp_path plugin's
def pytest_configure(config) -> None:
    if _is_worker(config) and config.workerinput.get("default_run"):
        os.nice(WORKER_NICE)
    if not _is_worker(config) and not config.option.collectonly:
        BACKGROUND["dir"] = str(config._tmp_path_factory.getbasetemp() / "default-run")
        reap_leftovers()
        # Under /var/tmp, which testbed hosts do not share: made by the first test to use it.
        # Named after this process, so that a later session knows when it is gone.
        me = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        SESSION["tool_cache"] = f"{LEFTOVERS[0]}{me}"
        SESSION["quick_jdk"] = str(quickjava.make(Path(f"{LEFTOVERS[1]}{me}")))
    _quick_java(config)


def _quick_java(config) -> None:
    """Localhost commands, this process's and its children's, find the quick JDK's java
    first (tests/quickjava.py); the testbed hosts' logins have their own."""
    jdk = config.workerinput.get("quick_jdk") if _is_worker(config) else SESSION.get("quick_jdk")
    if jdk and f"{jdk}/bin" not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = f"{jdk}/bin{os.pathsep}{os.environ.get('PATH', '')}"


def pytest_unconfigure(config) -> None:
    # The controller's last word, after xdist's own sessionfinish has stopped the workers
    # (this file's sessionfinish runs before it): a worker's group it could not remove, a
    # straggler having kept it, goes now.
    if CPU_DIR and not _is_worker(config):
        remove_stale_groups(CPUACCT, wait=10.0)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    node.workerinput["default_run"] = BACKGROUND.get("dir")
    node.workerinput["tool_cache"] = SESSION.get("tool_cache")
    node.workerinput["quick_jdk"] = SESSION.get("quick_jdk")


def _start_default_run() -> None:
    if "run" not in BACKGROUND and BACKGROUND.get("dir"):
        from tests.test_default_config import DefaultRun

        where = Path(str(BACKGROUND["dir"]))
        where.mkdir()
        # The session's tool cache, empty as on a new machine: the run and the other tests
        # resolve each runtime from Maven Central once between them, not once each.
        cache = Path(SESSION["tool_cache"])
        cache.mkdir(mode=0o755, exist_ok=True)
        _autogroups_off()
        BACKGROUND["run"] = DefaultRun(where, cache)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids) -> None:
    if any(i.split("::")[0].endswith(DEFAULT_TEST) for i in ids):
        _start_default_run()


# The costliest files' CPU-seconds, the mean of two fresh-clone runs on 2 Xeon cores (at
# 9e761e4 and e9b272e, PERFPOST_TEST_CPU): they start first, costliest first, so that the
# files left when the workers run out of work are short ones. In name order, the 370 of
# test_lab_crosscheck_e2e.py started halfway and test_yarn_e2e.py's 125 near the end. A file
# not listed (cheaper, or new) follows these; a number that rots only reorders the suite.
COSTLIEST = {
    "test_lab_crosscheck_e2e.py": 372,
    "test_builds_e2e.py": 258,
    "test_cluster_life_e2e.py": 226,
    "test_faults.py": 217,
    "test_cluster_order_e2e.py": 185,
    "test_closed_containers_e2e.py": 167,
    "test_clients_e2e.py": 159,
    "test_clusters_remote.py": 148,
    "test_clusters_e2e.py": 142,
    "test_scm_ha_e2e.py": 134,
    "test_private_hosts_e2e.py": 133,
    "test_yarn_e2e.py": 125,
    "test_bench.py": 114,
    "test_rereplication_e2e.py": 109,
    "test_om_ha_e2e.py": 101,
    "test_testdfsio_e2e.py": 80,
    "test_instrument_e2e.py": 80,
    "test_cluster_reads_e2e.py": 80,
    "test_setting_secrets_e2e.py": 78,
    "test_remote_e2e.py": 58,
    "test_lab_onefile_e2e.py": 58,
    "test_finished_records.py": 52,
}


# The quick files that take longest, in seconds of a worker (fresh-clone suite at fc51481,
# the tests' start and end times in PERFPOST_TEST_CPU's lines): first of the quick ones, for
# the same reason. In name order test_steady.py's 38 s came last, and ran alone at the end
# while the other two workers had nothing left (that run: 40 s with a core or more idle).
SLOWEST_QUICK = {
    "test_steady.py": 38,
    "test_remote.py": 29,
    "test_cellserver.py": 17,
    "test_validity.py": 16,
    "test_figures.py": 13,
    "test_hostscript.py": 12,
    "test_lifeline.py": 11,
    "test_parser_properties.py": 10,
}


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what they do
def pytest_collection_modifyitems(session, config, items) -> None:
    """The files that run real workflows first, costliest first (:data:`COSTLIEST`), then
    the default run's test, then the rest, slowest first (:data:`SLOWEST_QUICK`): xdist
    hands a worker a file at a time in this order (``--no-loadscope-reorder``), and the long
    ones started late left one worker running them alone at the end (its own order, by
    number of tests, put them last). The default run's test waits for the run, which has
    ended by then on a usual day; last, its half minute of site builds and Chromium had the
    machine idle beside it (a third of the two cores busy over the last 30 s at 127e978)."""

    def rank(item) -> tuple[int, int]:
        if item.path.name == DEFAULT_TEST:
            return 1, 0
        if not item.get_closest_marker("e2e"):
            return 2, -SLOWEST_QUICK.get(item.path.name, 0)
        return 0, -COSTLIEST.get(item.path.name, 0)

    items.sort(key=rank)  # stable: files keep their order within each rank


def pytest_collection_finish(session) -> None:
    if _is_worker(session.config) or session.config.option.collectonly:
        return
    if any(i.path.name == DEFAULT_TEST for i in session.items):
        _start_default_run()


def pytest_sessionfinish(session, exitstatus) -> None:
    run = BACKGROUND.pop("run", None)
    if run is not None:
        run.abandon()  # stopped as Ctrl-C would, if its test never waited for it
    if not _is_worker(session.config):
        _autogroups_restore()
    _cpu_profile_end(session.config)
    if not _is_worker(session.config) and SESSION.get("tool_cache"):
        shutil.rmtree(SESSION.pop("tool_cache"), ignore_errors=True)  # every worker is done
    if not _is_worker(session.config) and SESSION.get("quick_jdk"):
        shutil.rmtree(SESSION.pop("quick_jdk"), ignore_errors=True)
