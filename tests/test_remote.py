"""perfpost.run.remote against real sshd hosts: quoting, timeouts, host keys, failures."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from perfpost.run import envinfo, hostscript
from perfpost.run.remote import HostError, RemoteHost
from perfpost.tools.base import Proc
from tests.conftest import host_spec
from tests.testbed import _descendants


def processes(host: RemoteHost) -> list[str]:
    """Command lines of the host's processes, read from /proc (no ps on minimal hosts),
    less the ones doing the reading."""
    out = host.run(
        "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done 2>/dev/null; true", 30
    ).stdout
    return [line for line in out.splitlines() if line and "/proc/" not in line]


def test_command_runs_on_the_host_it_names(testbed):
    host = RemoteHost(host_spec(testbed, "h2"))
    try:
        result = host.run("echo $(id -un)", 30)
        assert result.exit_code == 0
        assert result.stdout.strip() == testbed.user
        if testbed.mode == "netns":
            assert host.run("hostname", 10).stdout.strip() == "h2"
    finally:
        host.close()


def test_a_remote_steps_output_reaches_perfpost_as_it_comes(testbed):
    """The line a measured step prints as its tools start comes while they run (the
    cluster steps timed from it), not with the rest of the output at the end."""
    host = RemoteHost(host_spec(testbed, "h1"))
    seen = []
    try:
        script = f"echo '{hostscript.BEGAN_MARKER} 12.5'; sleep 1.5; echo done"
        result = host.run(
            script, 30, on_stdout=hostscript.LineWatch(lambda e: seen.append((e, time.time())))
        )
        ended = time.time()
    finally:
        host.close()
    ((epoch, came),) = seen
    assert epoch == 12.5
    assert ended - came >= 1.4
    assert result.stdout.splitlines()[-1] == "done"


def test_metacharacters_arrive_literally_on_the_host(testbed, tmp_path):
    host = RemoteHost(host_spec(testbed, "h1"))
    victim = f"/tmp/perfpost-pwned-{uuid.uuid4().hex[:6]}"
    evil = f"1; touch {victim}; $(touch {victim}) `touch {victim}` ' \" * \\ \n end"
    logdir = f"/tmp/perfpost-{uuid.uuid4().hex[:8]}"
    try:
        host.run(f"mkdir -p {logdir}", 10)
        script = hostscript.measure_script("m", logdir, [Proc(("printf", "%s", evil), "o.log")])
        assert host.run(script, 30).exit_code == 0
        assert host.read(f"{logdir}/o.log") == evil.encode()
        assert host.run(f"test -e {victim}", 10).exit_code == 1
    finally:
        host.run(hostscript.cleanup_script(logdir), 10)
        host.close()


def test_output_is_utf_8_whatever_the_locale_and_however_it_is_cut(testbed, tmp_path):
    """A command's output is read in pieces; a character cut between two of them is still
    one character, and the text is UTF-8 even where this machine's locale is C (ASCII)."""
    code = (
        "import sys; sys.path[:0] = sys.argv[2:]; from perfpost.run.remote import RemoteHost;"
        "from tests.testbed import Testbed; bed = Testbed.load(sys.argv[1]);"
        "h = RemoteHost(bed.spec('h1')); r = h.run(\"printf 'x%.0s' $(seq 65535); printf"
        " '\\\\303\\\\251'; printf 'caf\\\\303\\\\251' >&2\", 30); h.close();"
        "sys.stdout.buffer.write((r.stdout[-1] + r.stderr).encode('utf-8'))"
    )
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    got = subprocess.run(
        [sys.executable, "-c", code, testbed.dir, root],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr.decode(errors="replace")
    # é is bytes 65,535 and 65,536: a read of 32 or 64 KiB ends between them.
    assert got.stdout.decode("utf-8") == "\u00e9caf\u00e9"


def test_a_hung_command_is_killed_at_its_timeout_with_everything_it_started(testbed):
    host = RemoteHost(host_spec(testbed, "h3"))
    tag = f"{uuid.uuid4().int % 10**6 + 1000}.25"
    try:
        start = time.monotonic()
        result = host.run(f"sleep {tag} & sleep {tag} & sleep {tag}; wait", 1.5)
        assert result.timed_out
        assert result.exit_code is None
        assert time.monotonic() - start < 1.5 + 10
        assert not [p for p in processes(host) if tag in p]
    finally:
        host.close()


def _tmp_entries(host: RemoteHost) -> set[str]:
    return set(host.run("ls -A /tmp", 30).stdout.split())


def test_a_command_that_exits_124_itself_has_not_timed_out(testbed):
    """124 is the status `timeout` exits with when it fires, and 137 when it had to KILL: a
    command may exit with either itself, and that is its exit code, not a timeout."""
    host = RemoteHost(host_spec(testbed, "h2"))
    try:
        before = _tmp_entries(host)
        result = host.run("echo out; printf err >&2; exit 124", 30)
        assert (result.exit_code, result.timed_out) == (124, False)
        assert (result.stdout, result.stderr) == ("out\n", "err")
        result = host.run("exit 137", 30)
        assert (result.exit_code, result.timed_out) == (137, False)
        # Nothing the wrapper wrote is left on the host (but the listing's own pidfile).
        left = _tmp_entries(host) - before
        assert len(left) <= 1, left
        assert all(n.endswith(".pid") for n in left), left
    finally:
        host.close()


def test_a_command_past_its_timeout_has_timed_out_whatever_its_status(testbed):
    host = RemoteHost(host_spec(testbed, "h2"))
    try:
        before = _tmp_entries(host)
        start = time.monotonic()
        result = host.run("printf err >&2; sleep 30", 1)
        assert (result.exit_code, result.timed_out) == (None, True)
        assert result.stderr == "err"  # what the command wrote, and only that
        assert time.monotonic() - start < 10
        # One that ignores TERM is killed KILL_AFTER (5 s) later: timed out all the same.
        tag = f"{uuid.uuid4().int % 10**6 + 1000}.75"
        start = time.monotonic()
        result = host.run(f"trap '' TERM; printf err >&2; sleep {tag}", 1)
        assert (result.exit_code, result.timed_out) == (None, True)
        assert result.stderr == "err"
        assert 1 + 5 <= time.monotonic() - start < 1 + 5 + 10
        assert not [p for p in processes(host) if tag in p]
        left = _tmp_entries(host) - before
        assert len(left) <= 1, left
        assert all(n.endswith(".pid") for n in left), left
    finally:
        host.close()


def test_interrupting_perfpost_kills_the_tool_on_the_host(testbed, tmp_path):
    """SIGTERM to `perfpost run-cell` (as Snakemake sends) leaves no dd behind on the host."""
    from perfpost.plan.build import build_plan

    spec = host_spec(testbed, "h1")
    workdir = f"/tmp/perfpost-slow-{uuid.uuid4().hex[:6]}"
    count = 10**11 + uuid.uuid4().int % 10**6  # a dd no other test could be running
    marker = f"count={count}"
    cfg = {
        "hosts": {"h1": {k: v for k, v in spec.items() if k != "name"}},
        "experiments": {
            "slow": {
                "tool": "dd",
                "hosts": ["h1"],
                "repeats": 1,
                "params": {"dir": workdir, "bs": "1", "count": count},
            }
        },
    }
    job = next(build_plan(cfg).jobs())
    out = tmp_path / "attempt-1" / "record.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "perfpost", "run-cell", "--spec", job.to_json(), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    host = RemoteHost(spec)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if any(p.startswith("dd ") and marker in p for p in processes(host)):
                break
            time.sleep(0.2)
        else:
            pytest.fail("dd never started on the host")
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        assert proc.returncode != 0
        assert not out.exists()  # an interrupted cell leaves no record that looks finished
        assert not [p for p in processes(host) if marker in p]
        assert host.run(f"ls {workdir}", 10).stdout.strip() == ""  # cleaned up all the same
    finally:
        if proc.poll() is None:
            proc.kill()
        host.close()


def test_a_changed_host_key_is_refused(testbed, tmp_path):
    h = testbed.host("h1")
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    name = h.address if h.port == 22 else f"[{h.address}]:{h.port}"
    known = tmp_path / "known_hosts"
    known.write_text(f"{name} {' '.join(Path(f'{other}.pub').read_text().split()[:2])}\n")
    for trust in (False, True):  # trusting new keys never extends to changed ones
        host = RemoteHost(host_spec(testbed, "h1", known_hosts=str(known), trust_new_keys=trust))
        with pytest.raises(HostError) as e:
            host.run("true", 10)
        assert str(e.value).startswith("host key rejected: the key of h1")
        assert "ssh-keygen -R" in str(e.value)


def test_an_unknown_host_key_is_refused_unless_trusted(testbed, tmp_path):
    known = tmp_path / "empty_known_hosts"
    known.write_text("")
    host = RemoteHost(host_spec(testbed, "h2", known_hosts=str(known)))
    with pytest.raises(HostError) as e:
        host.run("true", 10)
    assert "host key rejected: h2" in str(e.value)
    assert "trust_new_keys" in str(e.value)
    trusting = RemoteHost(host_spec(testbed, "h2", known_hosts=str(known), trust_new_keys=True))
    assert trusting.run("true", 10).exit_code == 0
    trusting.close()
    assert "ssh-ed25519" in known.read_text()  # saved: now an ordinary known host
    again = RemoteHost(host_spec(testbed, "h2", known_hosts=str(known)))
    assert again.run("true", 10).exit_code == 0
    again.close()


def test_unreachable_and_authentication_failures_say_so(testbed, tmp_path):
    h = testbed.host("h3")
    closed = RemoteHost(host_spec(testbed, "h3", port=1 if h.port != 1 else 2))
    with pytest.raises(HostError, match=r"^unreachable: .*refused"):
        closed.run("true", 10)
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    nobody = RemoteHost(host_spec(testbed, "h3", key=str(stranger)))
    with pytest.raises(HostError, match=r"^authentication failed"):
        nobody.run("true", 10)


def _failure_against(spec: dict, listener: socket.socket) -> str:
    """The HostError a command gets from the host ``spec`` names (a test server on
    ``listener``, closed after)."""
    host = RemoteHost(spec)
    try:
        with pytest.raises(HostError) as e:
            host.run("true", 10)
    finally:
        host.close()
        listener.close()
    return str(e.value)


def test_a_host_that_goes_down_while_authenticating_is_lost_not_refused(tmp_path):
    # A server that closes the connection once the client asks to log in, as a host going
    # down mid-handshake does: paramiko says "Authentication failed: transport shut down or
    # saw EOF", but no key was refused, and the reason must not send the user to their keys.
    import threading

    import paramiko

    for name in ("host", "client"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / name)],
            check=True,
        )
    host_key = paramiko.Ed25519Key.from_private_key_file(str(tmp_path / "host"))
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    known = tmp_path / "known_hosts"
    known.write_text(
        f"[127.0.0.1]:{port} {(tmp_path / 'host.pub').read_text().split(' ')[0]} "
        f"{(tmp_path / 'host.pub').read_text().split(' ')[1]}\n"
    )

    server_side: dict[str, paramiko.Transport] = {}

    class GoesDown(paramiko.ServerInterface):
        def get_allowed_auths(self, username):
            return "publickey"

        def check_auth_publickey(self, username, key):
            server_side["transport"].close()  # the host goes down here
            return paramiko.AUTH_FAILED

    def serve():
        conn, _ = listener.accept()
        transport = server_side["transport"] = paramiko.Transport(conn)
        transport.add_server_key(host_key)
        try:
            transport.start_server(server=GoesDown())
        except EOFError:  # its reply to the client fails: this side went down, as meant
            pass

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    spec = {
        "name": "gone",
        "address": "127.0.0.1",
        "port": port,
        "user": "perfpost",
        "key": str(tmp_path / "client"),
        "known_hosts": str(known),
    }
    error = _failure_against(spec, listener)
    assert error.startswith("connection to perfpost@127.0.0.1")
    assert "lost during authentication" in error


def _gone_host(tmp_path, port: int) -> dict:
    """The spec of a test server on loopback ``port`` that goes down mid-handshake (no key
    of it is known: it never gets that far)."""
    (tmp_path / "known_hosts").write_text("")
    return {
        "name": "gone",
        "address": "127.0.0.1",
        "port": port,
        "user": "perfpost",
        "key": str(tmp_path / "no-key"),
        "known_hosts": str(tmp_path / "known_hosts"),
    }


def test_a_host_that_goes_down_during_key_exchange_is_lost(tmp_path):
    """A server that sends its banner and closes once the client's arrives, as a host going
    down mid-handshake does: paramiko re-raises a bare EOFError from its transport thread (a
    CI run saw "internal error: EOFError()" as a cell's reason). The reason names the lost
    connection, like any other."""
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve():
        conn, _ = listener.accept()
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        conn.recv(256)  # the client's banner; the host goes down here
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    spec = _gone_host(tmp_path, port)
    assert _failure_against(spec, listener).startswith(
        f"connection to perfpost@127.0.0.1:{port} lost"
    )


def test_a_host_that_resets_the_connection_before_its_greeting_is_lost(tmp_path):
    """A server that accepts and resets the connection before its SSH banner, as a host whose
    sshd is being killed does: paramiko says "Error reading SSH protocol banner[Errno 104]
    Connection reset by peer" (a CI run had it as a cell's reason, where the test expected a
    lost or unreachable host). The reason names the lost connection."""
    import struct
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve():
        conn, _ = listener.accept()
        conn.recv(256)  # the client's banner: it now waits for the server's
        # SO_LINGER 0: close() sends a reset, not a FIN.
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    spec = _gone_host(tmp_path, port)
    error = _failure_against(spec, listener)
    assert error.startswith(f"connection to perfpost@127.0.0.1:{port} lost"), error
    assert "protocol banner" in error  # paramiko's own words kept


def test_closing_a_connection_to_a_host_that_went_down_does_not_raise(testbed, tmp_path):
    """run-cell closes its connection after the record is written. A host that died during
    the cell must not turn that close into a failed job: Snakemake deletes a failed job's
    output, and the record with its reason would be lost."""
    host = RemoteHost(host_spec(testbed, "h3"))
    assert host.read("/etc/hostname")  # the connection is in use
    # The host's sshd and sessions are frozen, so they cannot close the connection first,
    # and this end can no longer send: closing hits a dead socket, as after a crash.
    frozen = [*_descendants(testbed.host("h3").pid), testbed.host("h3").pid]
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        host.conn.transport.sock.shutdown(socket.SHUT_WR)
        host.close()
        assert not host.conn.is_connected  # the transport ended too
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
    assert RemoteHost(host_spec(testbed, "h3")).run("true", 30).exit_code == 0


@pytest.mark.parametrize("how", ["sshd frozen", "link down"])
def test_a_host_that_stops_answering_is_named_within_its_keepalive_limit(testbed, how):
    """A host whose sshd is frozen (or whose link went down) mid-command: the TCP connection
    stays open and nothing comes back. The command fails once no keepalive was answered for
    server_alive_interval x server_alive_count_max (here 1 s x 3), naming the host and when
    it was last heard; every later command on the connection fails at once, in those words,
    and a new connection works once the host answers again."""
    from perfpost.errors import HostSilent

    if how == "link down" and testbed.mode != "netns":
        pytest.skip("a host's link needs network namespaces (root)")
    spec = host_spec(testbed, "h3", server_alive_interval=1, server_alive_count_max=3)
    host = RemoteHost(spec)
    got: dict[str, object] = {}

    def command() -> None:
        try:
            got["result"] = host.run("sleep 20", 60)
        except HostError as e:
            got["error"] = e

    try:
        assert host.run("true", 30).exit_code == 0
        waiting = threading.Thread(target=command)
        waiting.start()
        time.sleep(1.5)
        cut_at = time.time()
        frozen = testbed.freeze_host("h3") if how == "sshd frozen" else []
        if how == "link down":
            testbed.set_link("h3", up=False)
        try:
            waiting.join(3 + 1 + 10)  # the limit, one interval, a loaded machine's slack
            done_at = time.time()
            assert not waiting.is_alive(), "the command still waits on a silent host"
            start = time.monotonic()
            with pytest.raises(HostSilent) as later:
                host.run("true", 30)
            assert time.monotonic() - start < 1  # at once: no new connection is tried
        finally:
            testbed.thaw_host(frozen)
            if how == "link down":
                testbed.set_link("h3", up=True)
        error = got["error"]
        assert isinstance(error, HostSilent), got
        assert str(later.value) == str(error)
        assert str(error).startswith("h3 stopped answering at ")
        # Last heard within one keepalive interval before the cut; given up 3 s after that.
        assert cut_at - 1 - 0.5 <= error.heard <= cut_at + 0.5
        assert error.silence >= 3
        assert done_at - error.heard >= 3
        said = time.strftime("%H:%M:%S", time.localtime(error.heard))
        assert str(error) == f"h3 stopped answering at {said} (no reply for {error.silence:.0f} s)"
    finally:
        host.close()
    again = RemoteHost(host_spec(testbed, "h3"))
    try:
        assert again.run("true", 60).exit_code == 0
    finally:
        again.close()


def test_environment_of_a_remote_host(testbed):
    host = RemoteHost(host_spec(testbed, "h3"))
    try:
        env = envinfo.parse(host.run(envinfo.SCRIPT, 60).stdout)
    finally:
        host.close()
    assert env["complete"]
    assert env["memory_bytes"] > 0
    assert env["cpu"]["threads"] == os.cpu_count()
    if testbed.mode == "netns":
        assert env["hostname"] == "h3"


def _ssh_config(testbed, path: Path) -> Path:
    h1, h2 = testbed.host("h1"), testbed.host("h2")
    path.write_text(
        f"Host jump\n  HostName {h1.address}\n  Port {h1.port}\n  User {testbed.user}\n"
        f"  IdentityFile {testbed.key}\n"
        f"Host inner\n  HostName {h2.address}\n  Port {h2.port}\n  User {testbed.user}\n"
        f"  IdentityFile {testbed.key}\n  ProxyJump jump\n"
    )
    return path


def test_an_ssh_config_alias_with_proxyjump_reaches_its_host(testbed, tmp_path):
    config = _ssh_config(testbed, tmp_path / "ssh_config")
    host = RemoteHost(
        {"name": "inner", "ssh_config": str(config), "known_hosts": testbed.known_hosts}
    )
    try:
        assert host.run("id -un", 30).stdout.strip() == testbed.user
        if testbed.mode == "netns":
            # Reached through h1: h2 sees the connection come from h1's address.
            assert host.run("hostname", 10).stdout.strip() == "h2"
            peer = host.run('echo "$SSH_CLIENT"', 10).stdout.split()[0]
            assert peer == testbed.host("h1").address
    finally:
        host.close()


def test_a_clusters_daemons_on_an_ssh_config_alias_bind_its_hostname(testbed, tmp_path):
    """A host named in the inventory by an ssh_config alias ("bh2", HostName h2's address):
    the alias is a name only this machine's ssh knows, so choosing the daemons' ports there
    failed ("choosing free ports on bh2 failed: Name or service not known"). They bind, and
    clients reach them at, the HostName."""
    from perfpost.clusters.base import ClusterSpec
    from perfpost.clusters.deployment import Deployment
    from perfpost.run.hosts import open_host

    h2 = testbed.host("h2")
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host bh2\n  HostName {h2.address}\n  Port {h2.port}\n  User {testbed.user}\n"
        f"  IdentityFile {testbed.key}\n"
    )
    spec = {"name": "bh2", "ssh_config": str(config), "known_hosts": testbed.known_hosts}
    cluster = ClusterSpec(
        name="c", kind="hdfs", version="3.4.2", roles={"namenode": ["bh2"]}, dir="/tmp"
    )
    dep = Deployment(spec=cluster, hosts={"bh2": spec}, opener=open_host)
    try:
        assert dep.address("namenode") == h2.address
        dep.free_ports("bh2", ["nn.rpc", "nn.http"])
        assert len({dep.ports["nn.rpc"], dep.ports["nn.http"]}) == 2
    finally:
        dep.close()
    # An address the inventory gives is still the one used.
    given = Deployment(spec=cluster, hosts={"bh2": {**spec, "address": "10.9.9.9"}})
    given.opener = open_host
    assert given.address("namenode") == "10.9.9.9"


def test_a_proxyjump_hop_with_an_unknown_key_is_refused(testbed, tmp_path):
    config = _ssh_config(testbed, tmp_path / "ssh_config")
    h2 = testbed.host("h2")
    only_inner = tmp_path / "known_hosts"
    only_inner.write_text(
        "".join(
            line + "\n"
            for line in Path(testbed.known_hosts).read_text().splitlines()
            if line.startswith((h2.address, f"[{h2.address}]"))
        )
    )
    host = RemoteHost({"name": "inner", "ssh_config": str(config), "known_hosts": str(only_inner)})
    with pytest.raises(HostError) as e:
        host.run("true", 10)
    assert "host key rejected" in str(e.value)
    assert testbed.host("h1").address in str(e.value)


def test_ssh_config_resolves_the_host_and_its_proxyjump_chain_as_openssh_does(tmp_path):
    # ssh_config(5): HostName/Port/User/IdentityFile of the matching Host block; ProxyJump
    # lists hops as [user@]host[:port], the first reached directly, each later one through
    # the hop before it, the host through the last. Nothing connects here.
    config = tmp_path / "ssh_config"
    config.write_text(
        "Host far\n  HostName 10.9.0.5\n  Port 2222\n  User alice\n"
        "  IdentityFile ~/keys/far\n  ProxyJump gate,bob@10.9.0.2:2200\n"
        "Host gate\n  HostName 10.9.0.1\n  User carol\n  IdentityFile ~/keys/gate\n"
    )
    host = RemoteHost({"name": "far", "ssh_config": str(config), "known_hosts": "/dev/null"})
    last, second, first = host.conn.hops()
    assert (first.host, first.port, first.user) == ("10.9.0.1", 22, "carol")
    assert not first.gateway
    assert (second.host, second.port, second.user) == ("10.9.0.2", 2200, "bob")
    assert second.gateway is first
    assert last.gateway is second
    assert (last.host, last.port, last.user) == ("10.9.0.5", 2222, "alice")
    # Each connection tries its own IdentityFile, no other hop's.
    assert last.connect_kwargs["key_filename"] == [os.path.expanduser("~/keys/far")]
    assert first.connect_kwargs["key_filename"] == [os.path.expanduser("~/keys/gate")]
    assert "key_filename" not in second.connect_kwargs
    assert host.where == "alice@10.9.0.5:2222"
    # The inventory's own values win over the file's; its key is tried first.
    host = RemoteHost(
        {"name": "far", "ssh_config": str(config), "user": "dave", "port": 22, "key": "/k"}
    )
    assert (host.conn.user, host.conn.port) == ("dave", 22)
    assert host.conn.connect_kwargs["key_filename"][0] == "/k"
    # `ProxyJump none` turns off a wildcard entry's jump, as in ssh.
    config.write_text("Host direct\n  ProxyJump none\nHost *\n  ProxyJump gate\n")
    assert RemoteHost({"name": "direct", "ssh_config": str(config)}).conn.hops()[1:] == []


def test_every_hop_gets_perfposts_host_key_policy_not_fabrics(tmp_path):
    """Fabric gives every connection (a ProxyJump hop's too) paramiko's AutoAddPolicy, which
    accepts any key; each hop here refuses an unknown key, or appends it with
    trust_new_keys (paramiko's own policy would rewrite the file)."""
    from paramiko import AutoAddPolicy, RejectPolicy

    from perfpost.run.hostkeys import AppendNewKeys

    config = tmp_path / "ssh_config"
    config.write_text(
        "Host far\n  HostName 10.9.0.5\n  ProxyJump gate\nHost gate\n  HostName 10.9.0.1\n"
    )
    for trust, policy in ((False, RejectPolicy), (True, AppendNewKeys)):
        host = RemoteHost({"name": "far", "ssh_config": str(config), "trust_new_keys": trust})
        hops = host.conn.hops()
        assert len(hops) == 2
        for hop in hops:
            assert type(hop.client._policy) is policy
            assert not isinstance(hop.client._policy, AutoAddPolicy)


def test_a_missing_ssh_config_is_named(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(HostError, match=f"ssh_config {missing} does not exist"):
        RemoteHost({"name": "x", "ssh_config": str(missing)})
