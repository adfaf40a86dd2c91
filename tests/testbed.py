"""Real SSH hosts on this machine, for trying perfpost's remote mode and for its tests.

Each host is its own ``sshd`` with its own host key. As root, every host lives in a network
namespace of its own (a veth pair on a private bridge, an address in 10.200.X.0/24, port 22)
and has its own /tmp, /var/tmp, /opt, /root and home (directories of its own disk, bound over
this machine's; the checkout hidden), so nothing reaches it through a shared path; otherwise
the hosts listen on loopback ports and share this machine's files. ``start`` writes
``inventory.yaml`` (perfpost's ``hosts:`` and ``ssh:`` config) and ``known_hosts`` into the
testbed directory; ``stop`` kills every process it started and removes every interface.

    python -m tests.testbed start -n 3 --dir .testbed
    python -m tests.testbed stop --dir .testbed

Traffic only ever goes to loopback or to the namespaces made here.
"""

from __future__ import annotations

import argparse
import fcntl
import getpass
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from tests import quickjava

STATE = "testbed.json"
# As root, hosts log in as this system user: a plain /bin/sh with no start-up files, so no
# one's dotfiles (a pyenv rehash, a slow prompt) run, or hang, on every command.
TEST_USER = "perfpost-testbed"
GREETING_TIMEOUT = 15.0


class TestbedError(RuntimeError):
    """The testbed could not be set up; says what is missing."""


@dataclass
class TestHost:
    name: str
    address: str
    port: int
    config: str
    log: str
    pid: int = 0
    netns: str | None = None
    veth: str | None = None
    # The host's own disk (netns mode): its /tmp, /var/tmp, /opt, /root and the login user's
    # home are directories here, bound over the shared ones, kept across a host's down/up.
    disk: str | None = None
    home: str | None = None  # the login user's home, private to the host


@dataclass
class Testbed:
    dir: str
    mode: str
    user: str
    key: str
    known_hosts: str
    inventory: str
    hosts: list[TestHost]
    bridge: str | None = None
    authorized_keys: str | None = None
    own_disks: bool = True  # the disks are the testbed's own (removed by stop)

    def host(self, name: str) -> TestHost:
        return next(h for h in self.hosts if h.name == name)

    def spec(self, name: str, **over: object) -> dict:
        """A host spec as perfpost's runner takes it (the inventory entry plus its name)."""
        h = self.host(name)
        return {
            "name": name,
            "address": h.address,
            "port": h.port,
            "user": self.user,
            "key": self.key,
            "known_hosts": self.known_hosts,
            **over,
        }

    def save(self) -> None:
        Path(self.dir, STATE).write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, directory: str | Path) -> Testbed:
        data = json.loads(Path(directory, STATE).read_text())
        data["hosts"] = [TestHost(**h) for h in data["hosts"]]
        return cls(**data)

    def stop_host(self, name: str) -> None:
        """The host goes down: its sshd and every session and tool process it started die."""
        h = self.host(name)
        victims = _descendants(h.pid) + ([h.pid] if h.pid else [])
        if h.netns:
            out = subprocess.run(
                ["ip", "netns", "pids", h.netns], capture_output=True, text=True, check=False
            ).stdout
            victims += [int(p) for p in out.split()]
        for pid in sorted(set(victims), reverse=True):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap(h.pid)
        h.pid = 0
        self.save()

    def sshd_pids(self, name: str) -> list[int]:
        """The host's sshd: its listener and the processes of its open sessions (not what
        those sessions started)."""
        h = self.host(name)
        return [p for p in [h.pid, *_descendants(h.pid)] if p and _comm(p) == "sshd"]

    def freeze_host(self, name: str) -> list[int]:
        """A partition as this machine sees it: the host's sshd and its sessions stop
        (SIGSTOP), so connections stay open and nothing comes back over them, while the
        commands they started run on. Returns the stopped pids (:meth:`thaw_host`)."""
        stopped = []
        try:
            for pid in self.sshd_pids(name):
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:  # a session that ended meanwhile
                    continue
                stopped.append(pid)
        except BaseException:
            self.thaw_host(stopped)
            raise
        return stopped

    def thaw_host(self, pids: list[int]) -> None:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def set_link(self, name: str, up: bool) -> None:
        """The host's network link (netns mode) goes down, or up again: packets to and from
        it are dropped, its processes and connections' state are kept."""
        h = self.host(name)
        if not h.netns or not h.veth:
            raise TestbedError("a host's link needs network namespaces (root)")
        _ip("-n", h.netns, "link", "set", f"{h.veth[:-1]}b", "up" if up else "down")

    def start_host(self, name: str) -> None:
        h = self.host(name)
        if h.pid and _alive(h.pid):
            return
        h.pid = _spawn_sshd(h)
        _wait_greeting(h)
        self.save()

    def stop(self) -> None:
        for h in self.hosts:
            self.stop_host(h.name)
        for h in self.hosts:
            if h.veth:
                _ip("link", "del", h.veth, check=False)
            if h.netns:
                _ip("netns", "del", h.netns, check=False)
        if self.bridge:
            _ip("link", "del", self.bridge, check=False)
        if self.authorized_keys:
            Path(self.authorized_keys).unlink(missing_ok=True)
        if self.own_disks:
            for h in self.hosts:
                if h.disk:
                    shutil.rmtree(h.disk, ignore_errors=True)
        Path(self.dir, STATE).unlink(missing_ok=True)


def _ip(*args: str, check: bool = True) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise TestbedError(f"ip {' '.join(args)}: {result.stderr.strip()}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _reap(pid: int) -> None:
    if not pid:
        return
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _descendants(pid: int) -> list[int]:
    if not pid:
        return []
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sshd() -> str:
    path = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
    if not path:
        raise TestbedError("sshd not found: install openssh-server (scripts/setup --test does)")
    return path


def _keygen(path: Path) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "perfpost-testbed", "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return Path(f"{path}.pub").read_text().strip()


# Where a host's own disk goes over the controller's directories (name in the disk, mode).
PRIVATE = (("/tmp", "tmp"), ("/var/tmp", "var_tmp"), ("/opt", "opt"), ("/root", "root"))
MODES = {"tmp": 0o1777, "var_tmp": 0o1777, "opt": 0o755, "root": 0o700, "home": 0o755}
# The checkout (and its .venv) is the controller's: hidden on every host.
CHECKOUT = Path(__file__).resolve().parents[1]


def _make_disk(disk: Path, user: str) -> None:
    """A host's disk: one directory per private mount, the home owned by the login user."""
    import pwd

    for name, mode in MODES.items():
        p = disk / name
        p.mkdir(parents=True, exist_ok=True)
        p.chmod(mode)
    pw = pwd.getpwnam(user)
    os.chown(disk / "home", pw.pw_uid, pw.pw_gid)


def _spawn_sshd(h: TestHost) -> int:
    argv = [_sshd(), "-D", "-e", "-f", h.config]
    if h.netns:
        # Private mounts, its own processes and hostname, as separate machines have: /tmp,
        # /var/tmp, /opt, /root and the login user's home are the host's own disk, the
        # checkout is hidden. The testbed's own files (sshd_config, keys) and the disk may
        # live under what gets covered: both are held at a stash first, the testbed's carried
        # back to its path once everything is covered.
        q = shlex.quote
        d = q(str(Path(h.config).parent.parent))
        covers = [(path, name) for path, name in PRIVATE]
        if h.home and h.home not in {p for p, _ in covers}:
            covers.append((h.home, "home"))
        binds = "".join(f" mount --bind $j/{name} {q(path)};" for path, name in covers)
        inner = (
            "set -e; mkdir -p /run/perfpost-testbed; k=$(mktemp -d /run/perfpost-testbed/XXXXXX);"
            " j=$(mktemp -d /run/perfpost-testbed/XXXXXX);"
            f" mount --bind {d} $k; mount --bind {q(str(h.disk))} $j;{binds}"
            # A checkout under a covered directory (/tmp/ci) is not there already.
            f" if [ -d {q(str(CHECKOUT))} ]; then"
            f" mount -t tmpfs -o size=1m,mode=755 perfpost-hidden {q(str(CHECKOUT))}; fi;"
            f" mkdir -p {d}; mount --bind $k {d}; umount $k $j; rmdir $k $j;"
            f" mount --bind {q(str(Path(h.config).parent / 'hosts'))} /etc/hosts;"
            f" hostname {h.name}; exec {shlex.join(argv)}"
        )
        argv = [
            "ip",
            "netns",
            "exec",
            h.netns,
            "unshare",
            "--mount",
            "--uts",
            "--pid",
            "--fork",
            "--mount-proc",
            "--propagation",
            "private",
            "sh",
            "-c",
            inner,
        ]
    log = open(h.log, "ab")
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
    )
    log.close()
    return proc.pid


def _wait_greeting(h: TestHost) -> None:
    deadline = time.monotonic() + GREETING_TIMEOUT
    last = ""
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((h.address, h.port), timeout=1) as s:
                if s.recv(64).startswith(b"SSH-"):
                    return
        except OSError as e:
            last = str(e)
        time.sleep(0.05)
    log = Path(h.log).read_text(errors="replace")[-2000:] if Path(h.log).exists() else ""
    raise TestbedError(
        f"sshd of {h.name} ({h.address}:{h.port}) did not greet within "
        f"{GREETING_TIMEOUT:g} s ({last}); its log:\n{log}"
    )


def _test_user() -> str:
    """The testbed's login user, made once (as root) and left in place for later runs."""
    exists = subprocess.run(["id", "-u", TEST_USER], capture_output=True, check=False)
    if exists.returncode != 0:
        home = f"/var/lib/{TEST_USER}"
        made = subprocess.run(
            [
                "useradd",
                "--system",
                "--create-home",
                "--home-dir",
                home,
                "--shell",
                "/bin/sh",
                TEST_USER,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        again = subprocess.run(["id", "-u", TEST_USER], capture_output=True, check=False)
        if made.returncode != 0 and again.returncode != 0:  # not made by another session
            raise TestbedError(f"cannot create user {TEST_USER}: {made.stderr.strip()}")
    # sshd refuses accounts whose password field is locked ('!'); '*' is no password at all.
    subprocess.run(["usermod", "-p", "*", TEST_USER], capture_output=True, check=True)
    _sudoer()
    return TEST_USER


SUDOERS = Path("/etc/sudoers.d") / TEST_USER


def _sudoer() -> None:
    """The login user may run commands as root without a password (``sudo -n``), as a lab's
    admin user can: an experiment's host set-up (a tmpfs mounted, a sysctl set) runs through
    sudo. Only where sudo is installed; left in place for later runs, as the user is."""
    if not Path("/usr/bin/sudo").exists() or not SUDOERS.parent.is_dir():
        return
    rule = f"{TEST_USER} ALL=(root) NOPASSWD: ALL\n"
    if not SUDOERS.exists() or SUDOERS.read_text() != rule:
        tmp = SUDOERS.with_name(f".{TEST_USER}.new")
        tmp.write_text(rule)
        tmp.chmod(0o440)
        tmp.replace(SUDOERS)


def _subnet() -> int:
    used = subprocess.run(
        ["ip", "-o", "-4", "addr"], capture_output=True, text=True, check=False
    ).stdout
    for _ in range(100):
        k = secrets.randbelow(250) + 1
        if f"10.200.{k}." not in used:
            return k
    raise TestbedError("no free 10.200.X.0/24 subnet for the testbed")


SSHD_CONFIG = """\
Port {port}
ListenAddress {address}
HostKey {hostkey}
PidFile {dir}/sshd.pid
AuthorizedKeysFile {authorized}
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
{subsystem}{setenv}MaxStartups 200:30:400
MaxSessions 200
LogLevel ERROR
"""


# A login's PATH on the hosts (sshd's default for a user), the quick JDK's bin first.
QUICK_PATH = f"SetEnv PATH=/opt/{quickjava.NAME}/bin:/usr/local/bin:/usr/bin:/bin:/usr/games\n"


def start(
    n: int,
    directory: str | Path,
    mode: str = "auto",
    user: str | None = None,
    sftp: bool = True,
    disks: str | Path | None = None,
    quick_java: bool = False,
) -> Testbed:
    """Start ``n`` sshd hosts named h1..hN; returns the testbed (also saved in ``directory``).
    With ``sftp=False`` the hosts offer no SFTP subsystem, as hardened servers do. As root,
    each host's own disk is ``<disks>/hN`` (default: in the testbed directory, removed by
    ``stop``); a ``disks`` directory given is kept, as machines keep theirs between runs.
    With ``quick_java`` (the suite's hosts, in network namespaces) each host's login finds
    the quick JDK's java first (tests/quickjava.py), in the host's own /opt."""
    root = os.geteuid() == 0
    if mode == "auto":
        mode = "netns" if root and shutil.which("ip") else "loopback"
    if mode == "netns" and not root:
        raise TestbedError("network namespaces need root; use --mode loopback")
    d = Path(directory).resolve()
    d.mkdir(parents=True, exist_ok=True)
    if (d / STATE).exists():
        Testbed.load(d).stop()
    _sshd()
    if root:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    key = d / "client_key"
    for p in (key, Path(f"{key}.pub")):
        p.unlink(missing_ok=True)
    pub = _keygen(key)
    tag = secrets.token_hex(2)
    if root:
        # sshd reads authorized keys as the login user, who may not enter a private testbed
        # directory (pytest's are 0700): keep them where that user can read them.
        shared = Path("/run/perfpost-testbed")
        shared.mkdir(mode=0o755, exist_ok=True)
        authorized = shared / f"authorized-{tag}"
    else:
        authorized = d / "authorized_keys"
    authorized.write_text(pub + "\n")
    authorized.chmod(0o644)
    user = user or (_test_user() if root else getpass.getuser())
    bed = Testbed(
        dir=str(d),
        mode=mode,
        user=user,
        key=str(key),
        known_hosts=str(d / "known_hosts"),
        inventory=str(d / "inventory.yaml"),
        hosts=[],
        authorized_keys=str(authorized),
        own_disks=disks is None,
    )
    disk_root = Path(disks).resolve() if disks is not None else d / "disks"
    real_jdk = quickjava.real_jdk() if quick_java else None
    import pwd

    home = pwd.getpwnam(user).pw_dir
    try:
        if mode == "netns":
            bed.bridge = f"ppb{tag}"
            _ip("link", "add", bed.bridge, "type", "bridge")
            # Sessions side by side (xdist workers) choose subnets one at a time.
            with open("/run/perfpost-testbed/subnet.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                k = _subnet()
                _ip("addr", "add", f"10.200.{k}.1/24", "dev", bed.bridge)
            _ip("link", "set", bed.bridge, "up")
        known = []
        for i in range(1, n + 1):
            hdir = d / f"h{i}"
            hdir.mkdir(exist_ok=True)
            hostkey = hdir / "ssh_host_ed25519_key"
            for p in (hostkey, Path(f"{hostkey}.pub")):
                p.unlink(missing_ok=True)
            hostpub = _keygen(hostkey)
            if mode == "netns":
                address, port = f"10.200.{k}.{10 + i}", 22
                h = TestHost(
                    f"h{i}",
                    address,
                    port,
                    str(hdir / "sshd_config"),
                    str(hdir / "sshd.log"),
                    netns=f"pp-{tag}-h{i}",
                    veth=f"pp{tag}{i}a",
                    disk=str(disk_root / f"h{i}"),
                    home=home,
                )
                _make_disk(Path(h.disk), user)
                if quick_java:
                    quickjava.make(Path(h.disk) / "opt" / quickjava.NAME, real_jdk)
                _ip("netns", "add", h.netns)
                _ip("link", "add", h.veth, "type", "veth", "peer", "name", f"pp{tag}{i}b")
                _ip("link", "set", h.veth, "master", bed.bridge)
                _ip("link", "set", h.veth, "up")
                _ip("link", "set", f"pp{tag}{i}b", "netns", h.netns)
                _ip("-n", h.netns, "addr", "add", f"{address}/24", "dev", f"pp{tag}{i}b")
                _ip("-n", h.netns, "link", "set", f"pp{tag}{i}b", "up")
                _ip("-n", h.netns, "link", "set", "lo", "up")
            else:
                address, port = "127.0.0.1", _free_port()
                h = TestHost(
                    f"h{i}", address, port, str(hdir / "sshd_config"), str(hdir / "sshd.log")
                )
            bed.hosts.append(h)
            # Its own name resolves, as on a real machine (Java asks for it).
            (hdir / "hosts").write_text(f"127.0.0.1 localhost\n{address} {h.name}\n")
            Path(h.config).write_text(
                SSHD_CONFIG.format(
                    port=port,
                    address=address,
                    hostkey=hostkey,
                    dir=hdir,
                    authorized=authorized,
                    subsystem="Subsystem sftp internal-sftp\n" if sftp else "",
                    setenv=QUICK_PATH if quick_java and mode == "netns" else "",
                )
            )
            keyname = address if port == 22 else f"[{address}]:{port}"
            known.append(f"{keyname} {' '.join(hostpub.split()[:2])}")
        Path(bed.known_hosts).write_text("\n".join(known) + "\n")
        if bed.mode == "netns":
            # And every other host's, as a lab's DNS resolves its machines: Hadoop's daemons
            # name each other by host name (a NodeManager registers as h5, not 10.200.x.15).
            names = "".join(f"{h.address} {h.name}\n" for h in bed.hosts)
            for h in bed.hosts:
                (Path(h.config).parent / "hosts").write_text(f"127.0.0.1 localhost\n{names}")
        for h in bed.hosts:
            h.pid = _spawn_sshd(h)
        bed.save()
        for h in bed.hosts:
            _wait_greeting(h)
    except BaseException:
        bed.stop()
        raise
    inventory = {
        "ssh": {"known_hosts": bed.known_hosts},
        "hosts": {
            h.name: {"address": h.address, "port": h.port, "user": user, "key": bed.key}
            for h in bed.hosts
        },
    }
    Path(bed.inventory).write_text(yaml.safe_dump(inventory, sort_keys=False))
    bed.save()
    return bed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="testbed", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start", help="start N sshd hosts and write inventory.yaml")
    s.add_argument("-n", type=int, default=3)
    s.add_argument("--dir", default=".testbed")
    s.add_argument("--mode", choices=["auto", "netns", "loopback"], default="auto")
    s.add_argument("--user", help="login user (default: you)")
    s.add_argument("--no-sftp", action="store_true", help="hosts without the SFTP subsystem")
    s.add_argument("--disks", help="keep the hosts' own disks here (default: removed by stop)")
    s = sub.add_parser("stop", help="stop the hosts and remove their interfaces")
    s.add_argument("--dir", default=".testbed")
    for name in ("down", "up"):
        s = sub.add_parser(name, help=f"take one host {name}")
        s.add_argument("host")
        s.add_argument("--dir", default=".testbed")
    args = p.parse_args(argv)
    try:
        if args.command == "start":
            bed = start(
                args.n, args.dir, args.mode, args.user, sftp=not args.no_sftp, disks=args.disks
            )
            for h in bed.hosts:
                print(
                    f"{h.name}: {bed.user}@{h.address}:{h.port}"
                    + (f" (netns {h.netns})" if h.netns else "")
                )
            print(f"inventory: {bed.inventory}")
        elif args.command == "stop":
            Testbed.load(args.dir).stop()
        elif args.command == "down":
            Testbed.load(args.dir).stop_host(args.host)
        else:
            Testbed.load(args.dir).start_host(args.host)
    except (TestbedError, FileNotFoundError) as e:
        print(f"testbed: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
