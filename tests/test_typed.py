"""Commands as a person types them (perfpost.analysis.typed), from records as perfpost keeps
them: the expected listings are written out here by hand."""

import shlex

from perfpost.analysis import typed

WORK = "/var/tmp/perfpost/perfpost-0123456789ab"


def test_a_freon_run_reads_as_ozone_freon_without_perfposts_wrappers():
    record = {
        "workdir": WORK,
        "params": {
            "dir": "/var/tmp/perfpost",
            "env": {"HADOOP_USER_NAME": "perfpost"},
            "launcher": "/root/.cache/perfpost/ozone-2.2.0/bin/ozone",
        },
        "command": (
            "env HADOOP_USER_NAME=perfpost 'OZONE_OPTS=-Xmx256m -javaagent:/root/.cache/"
            "perfpost/byteman-4.0.27/lib/byteman.jar=script:/tmp/x.btm -Xloggc:/tmp/gc.log' "
            "/root/.cache/perfpost/ozone-2.2.0/bin/ozone freon dfsg --copy-buffer=1 -n 200 "
            "--path=hdfs://127.0.0.1:38541/perfpost-0123456789ab -s 10240 -t 8"
        ),
    }
    assert typed.cell_listing(record, ["sync"]) == [
        "export HADOOP_USER_NAME=perfpost",
        # Continued before an option where the line would pass 80 characters.
        "ozone freon dfsg --copy-buffer=1 -n 200 --path=hdfs://127.0.0.1:38541/test \\\n"
        "  -s 10240 -t 8",
        "time sync",
    ]


def test_concurrent_readers_read_as_one_loop_in_the_background():
    readers = "\n".join(f"dd if={WORK}/read-{i} of=/dev/null bs=4k &" for i in range(1, 4))
    record = {
        "workdir": WORK,
        "params": {"dir": "/var/tmp/perfpost", "drop_cache": True},
        "command": readers,
    }
    assert typed.cell_listing(record, []) == [
        "sync; echo 3 > /proc/sys/vm/drop_caches",
        # `&` stays the shell's: quoted, dd would have taken it as an operand.
        "for i in $(seq 1 3); do dd if=/var/tmp/perfpost/read-$i of=/dev/null bs=4k & done; wait",
    ]


def test_shell_operators_are_not_quoted():
    assert typed.line("a && b > /tmp/x 2>&1", {}) == ["a && b > /tmp/x 2>&1"]
    assert typed.line("echo 'two words'", {}) == ["echo 'two words'"]


def test_a_shell_script_reads_as_its_author_wrote_it_not_inside_sh_c():
    # A command tool's run: a script of three lines, recorded as sh -c with its lines in one
    # argument (as shlex.join quotes it), the run's directory in it.
    script = f"for i in 1 2; do\n  dd if=/dev/zero of={WORK}/f$i bs=4k count=1\ndone"
    record = {
        "workdir": WORK,
        "params": {"dir": "/var/tmp/perfpost", "env": {"LC_ALL": "C"}},
        "command": f"env LC_ALL=C sh -c {shlex.quote(script)}",
    }
    assert typed.cell_listing(record, []) == [
        "export LC_ALL=C",
        "for i in 1 2; do",
        "  dd if=/dev/zero of=/var/tmp/perfpost/f$i bs=4k count=1",
        "done",
    ]
    # One line: the same, unquoted.
    assert typed.line("sh -c 'strace -c -o s.txt dd count=1'", {}) == [
        "strace -c -o s.txt dd count=1"
    ]


def test_a_long_script_line_wraps_outside_its_quotes_and_keeps_them():
    script = (
        "java -Dlog4j.configuration=file:/opt/hdfs/conf/log4j.properties -cp '/opt/hdfs/lib/*' "
        "org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark -fs hdfs://nn:8020 "
        "-op create -threads 4 -files 2000 -filesPerDir 1000"
    )
    (got,) = typed.line(f"sh -c {shlex.quote(script)}", {})
    lines = got.splitlines()
    assert len(lines) == 3
    assert lines[1].startswith("  ")
    assert "'/opt/hdfs/lib/*'" in got  # its quotes kept: the * stays for java to expand
    # The lines, joined back, are the script: the shell reads the same words.
    assert shlex.split(got.replace("\\\n", " ")) == shlex.split(script)
    assert all(len(x) <= typed.WIDTH + 2 for x in lines)


def test_a_clusters_install_reads_as_its_programs_on_the_path_and_its_home_variable():
    # TestDFSIO through the YARN install's launcher and NNThroughputBenchmark through the
    # HDFS install's jars: the cache paths ({yarn.home}, {hdfs.home}) are not what a person
    # types; `yarn ...` and $HADOOP_HOME are. An Ozone install is $OZONE_HOME.
    yarn = "/root/.cache/perfpost/yarn-3.4.2-8c39595dcafbf78e"
    hdfs = "/root/.cache/perfpost/hdfs-3.4.2-624e576dabc990ed"
    ozone = "/root/.cache/perfpost/ozone-2.2.0-0a1b2c3d4e5f6a7b"
    record = {
        "workdir": WORK,
        "params": {"dir": "/var/tmp/perfpost"},
        "clusters": [{"name": "hdfs", "kind": "hdfs"}, {"name": "y", "kind": "yarn"},
                     {"name": "o", "kind": "ozone"}],
        "cluster_fields": {"cluster.home": hdfs, "hdfs.home": hdfs, "y.home": yarn,
                           "o.home": ozone, "hdfs.fs": "hdfs://127.0.0.1:1"},
        "command": shlex.join(["sh", "-c", (
            f"{yarn}/bin/yarn org.apache.hadoop.fs.TestDFSIO -write; "
            f"java -cp '{hdfs}/lib/*' Nn; ls {ozone}/lib"
        )]),
    }  # fmt: skip
    assert typed.cell_listing(record, []) == [
        "yarn org.apache.hadoop.fs.TestDFSIO -write; java -cp '$HADOOP_HOME/lib/*' Nn; ls \\\n"
        "  $OZONE_HOME/lib"
    ]


def test_a_wait_reads_as_what_was_done_to_the_cluster_and_what_it_waited_for():
    # A wait's record: steps before it and one into it, as the steps recorded what they did.
    record = {
        "workdir": WORK,
        "tool": "wait",
        "params": {"dir": "/var/tmp/perfpost"},
        "command": f"sh -c 'while [ ! -e \"{WORK}/.until\" ]; do sleep 0.1; done'",
        "cluster_steps": [
            {"at": "before", "did": "killed the datanode-2 on h3 (pid 4711)"},
            {"at": "before", "did": "deleted the datanode-2's data directories on h3 (...)"},
            {"at": 1.5, "did": "started the datanode-2 on h3 (pid 4800)"},
        ],
        "until": {"metric": "under_replicated", "below": 1.0, "every": 0.5},
    }
    assert typed.cell_listing(record, []) == [
        "# killed the datanode-2 on h3 (pid 4711)",
        "# deleted the datanode-2's data directories on h3 (...)",
        "# wait until under_replicated < 1 (read every 0.5 s)",
        "#   1.5 s into it: started the datanode-2 on h3 (pid 4800)",
    ]


def test_a_command_an_offline_step_ran_reads_as_typed_on_its_host_first():
    """The steps with the cluster stopped come first, whatever their order in the record;
    a command a step ran is the command, its install's bin/ on the PATH."""
    home = "/var/lib/u/.cache/perfpost/ozone-2.2.0-0123456789abcdef"
    record = {
        "workdir": WORK,
        "tool": "wait",
        "params": {"dir": "/var/tmp/perfpost"},
        "command": f"sh -c 'while [ ! -e \"{WORK}/.until\" ]; do sleep 0.1; done'",
        "clusters": [{"name": "ozone", "kind": "ozone"}],
        "cluster_fields": {"cluster.home": home, "ozone.home": home},
        "cluster_steps": [
            {"at": "before", "did": "killed the datanode-2 on h3 (pid 4711)"},
            {"at": "offline", "did": "stopped every daemon: scm on h1 (pid 1)"},
            {
                "at": "offline",
                "did": f"ran `{home}/bin/ozone vapor cgscm -n 8 --from 0` on h1 for the scm "
                "(2.2 s; /var/tmp/x/logs/step-scm-110649.log)",
                "ran": f"{home}/bin/ozone vapor cgscm -n 8 --from 0",
                "host": "h1",
                "daemon": "scm",
            },
        ],
        "until": {"metric": "closed", "above": 7.0, "every": 0.25},
    }
    assert typed.cell_listing(record, []) == [
        "# stopped every daemon: scm on h1 (pid 1)",
        "# on h1, for the scm:",
        "ozone vapor cgscm -n 8 --from 0",
        "# killed the datanode-2 on h3 (pid 4711)",
        "# wait until closed > 7 (read every 0.25 s)",
    ]
