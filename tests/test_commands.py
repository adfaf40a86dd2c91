from perfpost.analysis.commands import collapse, readable


def test_counted_lines_become_one_loop():
    lines = [f"dd if=/w/read-{i} of=/dev/null bs=4k &" for i in (1, 2, 3)]
    assert collapse(lines) == [
        "for i in $(seq 1 3); do dd if=/w/read-$i of=/dev/null bs=4k & done; wait"
    ]


def test_lines_that_differ_otherwise_stay():
    lines = ["dd if=/a/read-1 bs=4k", "dd if=/a/read-2 bs=1M", "sync"]
    assert collapse(lines) == lines


def test_workdir_is_named_and_loops_fold():
    lines = [f"dd if=/dev/zero of=/t/perfpost-abc/read-{i} bs=1M count=64" for i in (1, 2)]
    assert readable(lines, "/t/perfpost-abc") == [
        "for i in $(seq 1 2); do dd if=/dev/zero of=$WORK/read-$i bs=1M count=64; done"
    ]
