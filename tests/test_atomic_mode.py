"""Files perfpost writes atomically get the mode open(2) would give them, 0666 less the umask:
a post's index.md and data.csv behind a web server running as another user must be readable
with the usual umask 022, and stay private under 077."""

from __future__ import annotations

import os
import stat

import pytest

from perfpost.records import write_json_atomic, write_text_atomic


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_the_umask_decides_the_mode_as_for_any_new_file(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        write_text_atomic(tmp_path / "index.md", "# post\n")
        write_json_atomic(tmp_path / "figures.json", [])
        with open(tmp_path / "plain.txt", "w") as fh:  # what open(2) gives, for reference
            fh.write("x")
    finally:
        os.umask(old)
    want = stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode)
    assert want == mode
    for name in ("index.md", "figures.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
