"""The run's cell server: a cell it forks ends as the job's own process would have (same
record, exit code and log), a signal to the job reaches the cell's tools, and the server
goes once its run has gone."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from perfpost import paths
from perfpost.plan import build, specs
from perfpost.run import cellclient, cellserver, lifeline
from tests.conftest import env_with_venv

SERVED = "perfpost: run by the run's cell server (pid {})"


@pytest.fixture
def server(tmp_path):
    """(socket path, janitor process, the run it serves): a `sleep` stands for the run."""
    run = subprocess.Popen(["sleep", "300"])
    sock = os.path.join(tempfile.mkdtemp(prefix="perfpost-cells-test-"), "socket")
    janitor = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "perfpost.cli.janitor",
            str(run.pid),
            str(lifeline.starttime(run.pid)),
            str(tmp_path),
            sock,
        ],
        env=env_with_venv(),
    )
    deadline = time.monotonic() + 30
    while not os.path.exists(sock):
        assert janitor.poll() is None, "the server left"
        assert time.monotonic() < deadline, "no socket"
        time.sleep(0.05)
    try:
        yield sock, janitor, run
    finally:
        run.kill()
        run.wait()
        try:
            janitor.wait(timeout=30)  # the server removes its socket and directory
        finally:
            if janitor.poll() is None:
                janitor.kill()
                janitor.wait()
            shutil.rmtree(os.path.dirname(sock), ignore_errors=True)


def cell(tmp_path: Path, count: int) -> tuple[str, str]:
    """(spec JSON, record path) of a dd cell writing ``count`` 64-byte blocks in tmp_path."""
    (tmp_path / "dd").mkdir(exist_ok=True)
    config = {
        "experiments": {
            "e": {
                "tool": "dd",
                "params": {"dir": str(tmp_path / "dd"), "bs": 64, "count": count},
                "repeats": 1,
            }
        }
    }
    spec = build.build_plan(config).spec("e", "default", "localhost", 1)
    return spec.to_json(), str(paths.record("e", "default", "localhost", 1, 1))


def run_cell(
    tmp_path: Path, spec: str, out: str, sock: str | None, command: str = "job", **kw
) -> subprocess.Popen:
    """A cell's job: ``command`` "job" is the rule's (the client run by its path, as
    glue.SERVED_JOB says), "perfpost" the command a person types."""
    env = {k: v for k, v in env_with_venv().items() if k != cellclient.ENV}
    if sock:
        env.update(cellclient.server_env(sock))  # as the run sets it
    log = open(tmp_path / "job.log", "w")  # the job's stdout, as Snakemake's shell gives it
    head = cellclient.job_argv(sys.executable) if command == "job" else ["perfpost"]
    return subprocess.Popen(
        [*head, "run-cell", "--spec", spec, "--out", out],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        **kw,
    )


@pytest.mark.parametrize("command", ["job", "perfpost"])
def test_a_served_cell_ends_as_a_cell_of_its_own_does(tmp_path, server, command):
    sock, janitor, _ = server
    spec, out = cell(tmp_path, 1000)
    assert run_cell(tmp_path, spec, out, sock, command).wait(timeout=60) == 0
    log = (tmp_path / "job.log").read_text().splitlines()
    # The job's own stdout, written by the server's child.
    assert log[0] == SERVED.format(janitor.pid)
    assert log[1] == "e default localhost r1 attempt 1: done"
    import json

    rec = json.loads((tmp_path / out).read_text())
    assert rec["status"] == "done"
    # dd's own count of bytes, as dd reported it in the raw log: 1000 blocks of 64 bytes.
    raw = (tmp_path / out).parent / "raw" / "dd.log"
    assert "64000 bytes" in raw.read_text()


def test_a_served_cell_fails_with_the_exit_code_and_words_of_its_own(tmp_path, server):
    sock = server[0]
    bad = '{"not": "a spec"}'
    alone = run_cell(tmp_path, bad, "results/x/record.json", None).wait(timeout=60)
    said_alone = (tmp_path / "job.log").read_text()
    served = run_cell(tmp_path, bad, "results/x/record.json", sock).wait(timeout=60)
    said = (tmp_path / "job.log").read_text().splitlines()
    assert alone != 0
    assert served == alone
    assert said[0] == SERVED.format(server[1].pid)
    assert "\n".join(said[1:]) + "\n" == said_alone


@pytest.mark.parametrize("command", ["job", "perfpost"])
def test_without_a_server_the_job_runs_its_cell_itself(tmp_path, command):
    spec, out = cell(tmp_path, 100)
    gone = os.path.join(tempfile.gettempdir(), f"perfpost-no-server-{os.getpid()}", "socket")
    assert run_cell(tmp_path, spec, out, gone, command).wait(timeout=60) == 0
    log = (tmp_path / "job.log").read_text()
    assert "cell server" not in log
    assert "attempt 1: done" in log


def _dd_of(tmp_path: Path) -> list[int]:
    """pids of dd processes writing under tmp_path."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                argv = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[0] == b"dd" and any(str(tmp_path).encode() in a for a in argv):
                found.append(int(entry.name))
    return found


# dd writes about a million 64-byte blocks a second here: 10**9 of them would run for hours,
# so a dd gone within STOPPED seconds was stopped (and the fixture below bounds it anyway).
LONG = 1_000_000_000
STOPPED = 10


@pytest.fixture(autouse=True)
def _no_dd_left(tmp_path):
    yield
    for pid in _dd_of(tmp_path):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _wait_for(pred, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


@pytest.mark.parametrize(
    ("how", "served"), [("SIGTERM", True), ("SIGTERM", False), ("SIGKILL", True)]
)
def test_stopping_the_job_stops_the_cells_tool(tmp_path, server, how, served):
    spec, out = cell(tmp_path, LONG)
    job = run_cell(tmp_path, spec, out, server[0] if served else None)
    assert _wait_for(lambda: _dd_of(tmp_path), 30), "dd never started"
    job.send_signal(getattr(signal, how))
    code = job.wait(timeout=30)
    assert _wait_for(lambda: not _dd_of(tmp_path), STOPPED), "dd outlived its job"
    if how == "SIGTERM":
        # 128 + SIGINT, the shell's code for an interrupted program, served or not.
        assert code == 130
        assert "interrupted" in (tmp_path / "job.log").read_text()
    # Stopped, so no record: the next run measures the cell again.
    assert not (tmp_path / out).exists()


def test_the_server_goes_with_its_run(server):
    sock, janitor, run = server
    run.kill()
    run.wait()
    assert janitor.wait(timeout=30) == 0
    assert not os.path.exists(os.path.dirname(sock))


def test_a_killed_runs_locks_go_at_once_though_its_cells_still_run(tmp_path, server):
    """Snakemake checks its locks before anything of perfpost runs, so a run started right
    after one was killed failed ("Directory cannot be locked") while the killed run's last
    cell was still ending: the watcher removed the locks only after its cells."""
    sock, _, run = server
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("")
    spec, out = cell(tmp_path, LONG)
    job = run_cell(tmp_path, spec, out, sock)
    try:
        assert _wait_for(lambda: _dd_of(tmp_path), 30), "dd never started"
        run.kill()
        run.wait()
        assert _wait_for(lambda: not list(locks.iterdir()), 10), "the locks stayed"
        assert _dd_of(tmp_path), "the cell ended first: this shows nothing"
    finally:
        job.send_signal(signal.SIGTERM)
        job.wait(timeout=30)


def test_a_request_carries_any_argument_variable_and_directory():
    # Empty arguments, '=' in arguments and values, bytes that are not UTF-8 (a variable
    # holding a Latin-1 path): the cell gets what the job had, as Python's os would give it.
    argv = ["run-cell", "", "--spec", '{"a": "b=c"}']
    env = {b"PATH": b"/bin:/usr/bin", b"EMPTY": b"", b"OPTS": b"-Dx=y", b"LATIN": b"caf\xe9"}
    got = cellclient.decode(cellclient.encode(argv, env, b"/tmp/caf\xe9"))
    assert got == (
        argv,
        {"PATH": "/bin:/usr/bin", "EMPTY": "", "OPTS": "-Dx=y", "LATIN": "caf\udce9"},
        "/tmp/caf\udce9",
    )


@pytest.mark.parametrize(
    "data", [b"", b"/tmp", b"/tmp\0two\0run-cell", b"/tmp\x002\0run-cell", b"/\x001\0a\0NOEQUALS"]
)
def test_a_malformed_request_is_refused(data):
    with pytest.raises(ValueError, match=r"^a request"):
        cellclient.decode(data)


def test_the_job_without_site_packages_knows_its_installation():
    # The job runs as `python -S`, where a virtualenv's interpreter keeps its base's
    # sys.prefix; it must still name the installation the server (site imported) names.
    code = f"import sys; sys.path.insert(0, {os.path.dirname(cellclient.__file__)!r}); "
    code += "import cellclient; print(cellclient.installation())"
    got = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == sys.prefix


def test_the_rules_job_hands_its_cell_over_itself(tmp_path):
    # The process that connects to the server is the rule's own client, not a second
    # Python it started (which had cost every served cell a full interpreter and perfpost's
    # imports): the peer's command line, from /proc, is the client's.
    import socket
    import struct

    sock = os.path.join(tempfile.mkdtemp(prefix="perfpost-cells-test-"), "socket")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock)
    listener.listen(1)
    listener.settimeout(30)
    spec, out = cell(tmp_path, 1)
    job = run_cell(tmp_path, spec, out, sock)
    try:
        conn, _ = listener.accept()
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid = struct.unpack("3i", creds)[0]
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        # The whole request first, as the server reads it: a job cut off while sending
        # takes the server for gone and runs the cell itself.
        (got_argv, _, _), fds = cellserver._read_request(conn)
        for fd in fds:
            os.close(fd)
        assert got_argv[0] == "run-cell"
        conn.close()  # no answer: the job says the server went away and fails
        assert job.wait(timeout=30) == 1
        assert pid == job.pid
        assert argv[1:3] == [b"-S", os.fsencode(os.path.abspath(cellclient.__file__))]
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
        listener.close()
        shutil.rmtree(os.path.dirname(sock), ignore_errors=True)
    assert "went away before the cell ended" in (tmp_path / "job.log").read_text()


@pytest.mark.parametrize(
    ("runtime", "remote"),
    [
        ('{"hosts": {"localhost": {"name": "localhost"}}}', False),
        ('{"hosts": {"localhost": {}, "h1": {"name": "h1", "address": "10.0.0.1"}}}', True),
        (None, True),  # a server outside a run: it may serve anything
        ("not json", True),
    ],
)
def test_the_server_imports_paramiko_only_for_a_run_with_an_ssh_host(monkeypatch, runtime, remote):
    if runtime is None:
        monkeypatch.delenv(specs.RUNTIME_ENV, raising=False)
    else:
        monkeypatch.setenv(specs.RUNTIME_ENV, runtime)
    assert cellserver._remote_hosts() is remote


def test_the_watcher_takes_the_listening_socket_it_was_handed_and_nothing_else(tmp_path):
    import socket

    path = str(tmp_path / "socket")
    made = cellserver.listen(path)
    assert made is not None
    fd = os.dup(made.fileno())  # as the watcher gets it: a descriptor of its own
    made.close()
    got = cellserver.inherited(fd)
    try:
        assert got is not None
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)  # the same socket: a job's connection arrives on it
        got.settimeout(5)
        conn, _ = got.accept()
        conn.close()
        client.close()
        assert os.readlink(f"/proc/self/fd/{fd}") == "/dev/null"  # the number is reused safely
    finally:
        if got is not None:
            got.close()
        os.close(fd)
    # A pipe, or a socket that does not listen, is not taken, and stays as it was.
    r, w = os.pipe()
    plain = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        for other in (r, plain.fileno()):
            before = os.readlink(f"/proc/self/fd/{other}")
            assert cellserver.inherited(other) is None
            assert os.readlink(f"/proc/self/fd/{other}") == before
    finally:
        os.close(r)
        os.close(w)
        plain.close()


@pytest.mark.e2e
def test_a_runs_first_jobs_are_served_though_they_start_with_it(tmp_path):
    # Snakemake starts the first wave of jobs the moment the run starts, while its server
    # is still importing perfpost: they wait for it rather than run the cell themselves.
    from tests.e2e import make_checkout, snakemake

    config = {
        "experiments": {
            "e": {
                "tool": "dd",
                "params": {"dir": str(tmp_path), "bs": 64},
                "axes": {"count": [100, 101, 102, 103]},
                "repeats": 1,
            }
        }
    }
    work = make_checkout(tmp_path / "w", config)
    done = snakemake(work, "--cores", "4", "results/e/tidy.csv")
    assert done.returncode == 0, done.stderr[-3000:]
    logs = sorted(work.glob("results/e/cells/*/localhost/r1/attempt-1/perfpost.log"))
    assert len(logs) == 4
    for log in logs:
        first = log.read_text().splitlines()[0]
        assert first.startswith("perfpost: run by the run's cell server"), (log, first)


@pytest.mark.e2e
def test_the_steps_after_the_cells_are_served_by_the_cells_server(tmp_path):
    # tables, env, figures, post, html and history-add each imported pandas, matplotlib and
    # scipy anew in a process of its own; the run's server forks them as it forks its cells.
    from tests.e2e import make_checkout, snakemake

    config = {
        "experiments": {
            "e": {
                "tool": "dd",
                "params": {"dir": str(tmp_path), "bs": 64},
                "axes": {"count": [100, 200]},
                "repeats": 2,
            }
        }
    }
    work = make_checkout(tmp_path / "w", config)
    done = snakemake(work, "--cores", "2", "report")
    assert done.returncode == 0, done.stderr[-3000:]
    cells = sorted(work.glob("results/e/cells/*/localhost/r*/attempt-1/perfpost.log"))
    steps = sorted((work / "results" / "e" / "logs").glob("*.log"))
    steps += sorted((work / "results" / "e" / "env").glob("*.log"))
    assert {p.stem for p in steps} >= {"tables", "figures", "post", "html", "history", "localhost"}
    servers = set()
    for log in cells + steps:
        first = log.read_text().splitlines()[0]
        assert first.startswith("perfpost: run by the run's cell server (pid "), (log, first)
        servers.add(first)
    assert len(servers) == 1  # one server for the run: its cells and its steps
    assert (work / "reports" / "e" / "index.md").is_file()


def test_a_job_in_another_python_runs_its_cell_itself(tmp_path, server):
    # Under --use-conda a rule's job runs in its conda environment, not in the Python that
    # Snakemake (and so the run's server) runs in: the cell must run where the rule says.
    spec, out = cell(tmp_path, 100)
    job = subprocess.Popen(
        [*cellclient.job_argv(sys.executable), "run-cell", "--spec", spec, "--out", out],
        cwd=tmp_path,
        env={
            **env_with_venv(),
            **cellclient.server_env(server[0]),
            cellclient.PREFIX_ENV: "/opt/conda/envs/another",
        },
        stdout=open(tmp_path / "job.log", "w"),
        stderr=subprocess.STDOUT,
    )
    assert job.wait(timeout=60) == 0
    log = (tmp_path / "job.log").read_text()
    assert "cell server" not in log
    assert "attempt 1: done" in log


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_stopped_server_takes_its_cells_down_and_leaves_no_socket(tmp_path, server, how):
    # Whoever stops the run's watcher stops the cells it forked: their jobs have lost their
    # answer and fail, so a cell running on would measure for nobody and leave a record the
    # run counts as failed. SIGTERM also lets the watcher remove its socket's directory.
    sock, janitor, _ = server
    spec, out = cell(tmp_path, LONG)
    job = run_cell(tmp_path, spec, out, sock)
    assert _wait_for(lambda: _dd_of(tmp_path), 30), "dd never started"
    janitor.send_signal(getattr(signal, how))
    janitor.wait(timeout=30)
    assert job.wait(timeout=30) != 0
    assert "went away before the cell ended" in (tmp_path / "job.log").read_text()
    assert _wait_for(lambda: not _dd_of(tmp_path), STOPPED), "dd outlived its server"
    assert not (tmp_path / out).exists()
    if how == "SIGTERM":
        assert not os.path.exists(os.path.dirname(sock))
