"""Scripts built from argument lists, run for real on localhost."""

import os
import shlex
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from perfpost.errors import PerfpostError
from perfpost.run import hostscript
from perfpost.tools.base import Proc


def test_shell_metacharacters_arrive_literally(localhost, tmp_path):
    victim = tmp_path / "pwned"
    logdir = tmp_path / "perfpost-logs"
    logdir.mkdir()
    evil = f"1; touch {victim}; $(touch {victim}) `touch {victim}` ' \" *"
    script = hostscript.measure_script(
        "measure", str(logdir), [Proc(("printf", "%s", evil), "out.log")]
    )
    result = localhost.run(script, 10)
    assert result.exit_code == 0
    assert (logdir / "out.log").read_text() == evil
    assert not victim.exists()


def test_markers_carry_host_timing_and_every_exit_code(localhost, tmp_path):
    logdir = tmp_path / "perfpost-logs"
    logdir.mkdir()
    procs = [
        Proc(("sh", "-c", "sleep 0.2; exit 0"), "a.log"),
        Proc(("sh", "-c", "sleep 0.2; exit 3"), "b.log"),
    ]
    before = time.time()
    result = localhost.run(hostscript.measure_script("measure", str(logdir), procs), 10)
    after = time.time()
    t = hostscript.parse_markers(result.stdout)["measure"]
    assert t.exit_codes == (0, 3)
    assert before <= t.start < t.end <= after
    # Run concurrently: two 0.2 s sleeps take well under their 0.4 s sum.
    assert t.elapsed < 0.39


def _watched(host, script, timeout=10):
    """Run ``script`` with a LineWatch on its output: the host's epoch the line gave, and
    this machine's clock when it came, beside the result and its end."""
    seen = []
    result = host.run(
        script, timeout, on_stdout=hostscript.LineWatch(lambda e: seen.append((e, time.time())))
    )
    return result, seen, time.time()


def test_the_began_line_arrives_while_the_tools_still_run(localhost, tmp_path):
    logdir = tmp_path / "perfpost-logs"
    logdir.mkdir()
    procs = [Proc(("sleep", "1.5"), "a.log")]
    script = hostscript.measure_script("measure", str(logdir), procs)
    result, seen, ended = _watched(localhost, script)
    ((epoch, came),) = seen
    t = hostscript.parse_markers(result.stdout)["measure"]
    # The epoch is the step's own start (the marker's), and it came 1.5 s before the end:
    # as the tools started, not with the rest of the output.
    assert epoch == t.start
    assert ended - came >= 1.4
    assert hostscript.BEGAN_MARKER in result.stdout  # the output is whole


@pytest.mark.parametrize("cut", [1, 5, 17])
def test_a_began_line_cut_anywhere_is_read_once(cut):
    seen = []
    watch = hostscript.LineWatch(seen.append)
    data = f"noise\n{hostscript.BEGAN_MARKER} 1700000000.25\nmore\n{hostscript.BEGAN_MARKER} 9\n"
    for i in range(0, len(data), cut):
        watch(data[i : i + cut].encode())
    assert seen == [1700000000.25]


def test_a_common_start_waits_for_its_moment_and_says_how_early_or_late_the_host_was(
    localhost, tmp_path
):
    logdir = tmp_path / "perfpost-logs"
    logdir.mkdir()
    procs = [Proc(("true",), "a.log")]
    # Ready 0.5 s ahead: the step starts at the moment, not before it.
    at = time.time() + 0.5
    result = localhost.run(
        hostscript.measure_script("measure", str(logdir), procs, start_at=at), 10
    )
    t = hostscript.parse_markers(result.stdout)["measure"]
    ahead = hostscript.parse_ahead(result.stdout)
    assert at <= t.start < at + 0.1
    assert 0.3 < ahead <= 0.5  # the script's own start-up took some of the 0.5 s
    # A moment already past: the host says it was late by as much, and starts at once.
    at = time.time() - 2.0
    t0 = time.time()
    result = localhost.run(
        hostscript.measure_script("measure", str(logdir), procs, start_at=at), 10
    )
    assert -2.5 < hostscript.parse_ahead(result.stdout) < -2.0
    assert hostscript.parse_markers(result.stdout)["measure"].start < t0 + 0.5
    # Without a common start there is nothing to say.
    result = localhost.run(hostscript.measure_script("measure", str(logdir), procs), 10)
    assert hostscript.parse_ahead(result.stdout) is None


def _processes_with(arg: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if arg.encode() in cmdline:
            found.append(int(pid))
    return found


def test_timeout_kills_every_process_of_the_step(localhost, tmp_path):
    logdir = tmp_path / "perfpost-logs"
    logdir.mkdir()
    tag = f"{uuid.uuid4().int % 10**6 + 1000}.5"  # a unique sleep length to find them by
    procs = [Proc(("sleep", tag), "a.log"), Proc(("sleep", tag), "b.log")]
    script = hostscript.measure_script(
        "measure", str(logdir), procs, background=[Proc(("sleep", tag))]
    )
    result = localhost.run(script, 0.5)
    assert result.timed_out
    assert result.exit_code is None
    # SIGKILL is sent by the time run() returns, but a killed process exits when it next gets
    # the CPU: a suite on two busy cores saw one still listed. Killed, it is gone in moments;
    # missed, a sleep of 1,000 s or more stays for the whole wait.
    deadline = time.monotonic() + 10
    while _processes_with(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(tag) == []


def test_at_a_timeout_the_steps_processes_get_their_grace_after_the_shell_is_gone(
    localhost, tmp_path
):
    """The shell dies at TERM at once; a process under it that cleans up on TERM (a JVM's
    shutdown hooks: `hadoop jar` removes the jar it unpacked in /tmp) still gets the grace
    before KILL. With KILL right after the shell's end, its 0.3 s of cleaning never ended."""
    done = tmp_path / "cleaned"
    child = f"trap 'sleep 0.3; touch {done}; exit 0' TERM; while :; do sleep 0.05; done"
    result = localhost.run(f"sh -c {shlex.quote(child)} & wait", 0.5)
    assert result.timed_out
    assert done.exists()


def test_a_local_command_that_exits_124_itself_has_not_timed_out(localhost):
    """As on SSH hosts (tests/test_remote.py): 124 and 137, `timeout`'s own statuses, are a
    command's exit code when it exits with them; a command past its timeout has timed out."""
    result = localhost.run("echo out; printf err >&2; exit 124", 10)
    assert (result.exit_code, result.timed_out) == (124, False)
    assert (result.stdout, result.stderr) == ("out\n", "err")
    assert localhost.run("exit 137", 10).exit_code == 137
    result = localhost.run("printf err >&2; sleep 30", 0.5)
    assert (result.exit_code, result.timed_out) == (None, True)
    assert result.stderr == "err"
    result = localhost.run("trap '' TERM; sleep 30", 0.5)
    assert (result.exit_code, result.timed_out) == (None, True)


def test_drop_cache_refused_to_an_unprivileged_user(localhost):
    if os.geteuid() == 0:
        script = (
            f"exec setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "
            f"{hostscript.quote([hostscript.drop_cache_script()])}"
        )
    else:
        script = hostscript.drop_cache_script()
    result = localhost.run(script, 30)
    assert result.exit_code == 3
    assert result.stdout.startswith(hostscript.UNPRIVILEGED)
    assert "not writable" in result.stdout


def test_drop_cache_refused_where_proc_sys_is_read_only(localhost):
    if os.geteuid() != 0:
        pytest.skip("needs root to make a mount namespace; covered by the test above")
    script = (
        "mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && "
        f"sh -c {hostscript.quote([hostscript.drop_cache_script()])}"
    )
    result = localhost.run(
        f"exec unshare --mount --propagation private sh -c {hostscript.quote([script])}", 30
    )
    assert result.exit_code == 3
    assert result.stdout.startswith(hostscript.UNPRIVILEGED)


def test_the_cache_line_gives_the_disk_under_the_files_and_its_lsblk_facts():
    line = "@perfpost-cache 800 100 0 4096 dm-0 1 - lvm"
    assert hostscript.parse_cache_line(f"noise\n{line}\n") == {
        "cached_before": 800,
        "cached_after": 100,
        "files_resident": 0,
        "files_bytes": 4096,
        "disk": "dm-0",
        "rotational": True,
        "transport": None,
        "type": "lvm",
    }
    # A line from before the device's type was printed: the type is unknown, the rest read.
    old = hostscript.parse_cache_line("@perfpost-cache 800 100 0 4096 sda 1 sata\n")
    assert old is not None
    assert (old["disk"], old["transport"], old["type"]) == ("sda", "sata", None)


def _lsblk_type_under(path: Path) -> tuple[str, str]:
    """The whole device under ``path`` as the kernel names it (the disk of a partition), and
    its TYPE as ``lsblk -ndo TYPE`` prints it."""
    dev = os.stat(path).st_dev
    block = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not block.exists():
        pytest.skip(f"{path} is on no block device (st_dev {os.major(dev)}:{os.minor(dev)})")
    block = block.resolve()
    whole = block.parent if (block / "partition").exists() else block
    kind = subprocess.run(
        ["lsblk", "-ndo", "TYPE", f"/dev/{whole.name}"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return whole.name, kind


def _drop_under(localhost, where: Path) -> dict:
    workdir = where / f"perfpost-drop-{uuid.uuid4().hex[:8]}"
    workdir.mkdir()
    try:
        (workdir / "f").write_bytes(b"x" * 65536)
        result = localhost.run(hostscript.drop_cache_script(str(workdir)), 60)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        facts = hostscript.parse_cache_line(result.stdout)
        assert facts is not None, result.stdout
        return facts
    finally:
        subprocess.run(["rm", "-rf", "--", str(workdir)], check=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping the page cache needs root")
def test_a_real_drop_records_the_type_lsblk_gives_the_device_under_the_files(localhost):
    facts = _drop_under(localhost, Path("/var/tmp"))
    assert (facts["disk"], facts["type"]) == _lsblk_type_under(Path("/var/tmp"))


@pytest.mark.skipif(os.geteuid() != 0, reason="a loop device needs root")
def test_a_real_drop_on_a_loop_device_records_loop(localhost, tmp_path):
    """A file system in a file, on a loop device: not a disk, whatever the disk under it."""
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed")
    image, mnt = tmp_path / "disk.img", tmp_path / "mnt"
    mnt.mkdir()
    with image.open("wb") as fh:
        fh.truncate(16 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    attach = subprocess.run(
        ["losetup", "--find", "--show", str(image)], capture_output=True, text=True, check=False
    )
    if attach.returncode != 0:
        pytest.skip(f"no loop device: {attach.stderr.strip()}")
    loop = attach.stdout.strip()
    try:
        subprocess.run(["mount", loop, str(mnt)], check=True, capture_output=True)
        try:
            facts = _drop_under(localhost, mnt)
            assert (facts["disk"], facts["type"]) == _lsblk_type_under(mnt)
            assert (facts["disk"], facts["type"]) == (Path(loop).name, "loop")
        finally:
            subprocess.run(["umount", str(mnt)], check=True, capture_output=True)
    finally:
        subprocess.run(["losetup", "-d", loop], check=True, capture_output=True)


@pytest.mark.parametrize("path", ["/", "/var/tmp", "relative/perfpost-x", "/tmp/x; rm -rf ~"])
def test_scratch_paths_perfpost_did_not_name_are_refused(path):
    with pytest.raises(PerfpostError):
        hostscript.cleanup_script(path)


def test_a_remote_step_runs_its_abandon_script_when_its_lifeline_closes_before_its_output(
    tmp_path,
):
    """The remote wrapper as sshd runs it, with the SSH channel's three pipes. When perfpost
    dies, sshd closes the channel's standard input (the lifeline) and its output pipes, in
    an order of its own: the abandon script must run whichever closes last. Here the
    output pipes stay open, as they do for a moment when sshd closes standard input first."""
    gone = tmp_path / "abandoned"
    pidfile = tmp_path / "step.pid"
    lifeline_r, lifeline_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(lifeline_w, hostscript.env_block({}))
    wrapper = hostscript.remote_wrapper(str(pidfile), 60, 5)
    proc = subprocess.Popen(
        ["sh", "-c", wrapper, "perfpost", "sleep 60", f"touch {gone}"],
        stdin=lifeline_r,
        stdout=out_w,
        stderr=out_w,
        start_new_session=True,
    )
    os.close(lifeline_r)
    os.close(out_w)
    try:
        deadline = time.monotonic() + 10
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pidfile.exists(), "the step never started"
        os.close(lifeline_w)  # perfpost is gone; its output pipe is still open
        proc.wait(10)
        # The watcher kills the step, waits a second for it to die, then runs the script.
        deadline = time.monotonic() + 10
        while not gone.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone.exists(), "the abandon script never ran"
    finally:
        os.close(out_r)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _java_on_path(tmp_path):
    """A JDK's layout reached as Debian reaches it: bin/java -> alternatives -> <jdk>/bin/java."""
    jdk = tmp_path / "jvm" / "jdk-17"
    (jdk / "bin").mkdir(parents=True)
    java = jdk / "bin" / "java"
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    (tmp_path / "alternatives").mkdir()
    (tmp_path / "alternatives" / "java").symlink_to(java)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").symlink_to(tmp_path / "alternatives" / "java")
    return jdk


@pytest.mark.parametrize("preset", [None, "/opt/the-hosts-own-jdk"])
def test_a_step_without_java_home_gets_the_jdk_its_java_belongs_to(tmp_path, monkeypatch, preset):
    """Ozone's and Hadoop's launchers need JAVA_HOME, which a host reached over SSH often
    lacks: the step gets the JDK its java resolves into, and a JAVA_HOME already set stays."""
    from perfpost.run.hosts import LocalHost

    monkeypatch.delenv("JAVA_HOME", raising=False)
    jdk = _java_on_path(tmp_path)
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    if preset:
        env["JAVA_HOME"] = preset
    got = LocalHost(env).run('printf %s "${JAVA_HOME-unset}"', 30)
    assert got.exit_code == 0, got.stderr
    assert got.stdout == (preset or str(jdk.resolve()))


def test_a_host_without_java_gets_no_java_home(tmp_path, monkeypatch):
    from perfpost.run.hosts import LocalHost

    monkeypatch.delenv("JAVA_HOME", raising=False)
    (tmp_path / "bin").mkdir()
    for tool in ("sh", "cat", "sleep", "base64", "readlink", "timeout", "rm"):  # no java
        (tmp_path / "bin" / tool).symlink_to(shutil.which(tool))
    got = LocalHost({"PATH": str(tmp_path / "bin")}).run('printf %s "${JAVA_HOME-unset}"', 30)
    assert got.exit_code == 0, got.stderr
    assert got.stdout == "unset"


@pytest.mark.parametrize(
    ("stdout", "said", "java_home"),
    [
        (
            "Ozone 2.2.0\n\n@perfpost-java-home=/usr/lib/jvm/j17\n",
            "Ozone 2.2.0\n",
            "/usr/lib/jvm/j17",
        ),
        ("\n@perfpost-java-home=\n", "", None),  # no JAVA_HOME and no java: none
        ("dd (coreutils) 9.1\n", "dd (coreutils) 9.1\n", None),  # an older host script's
    ],
)
def test_the_version_step_s_java_home_line_is_taken_off_its_output(stdout, said, java_home):
    assert hostscript.split_java_home(stdout) == (said, java_home)
