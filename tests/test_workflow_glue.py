"""Which attempt of a cell the workflow wants: the rule behind re-running only what failed."""

from pathlib import Path

from perfpost import paths
from perfpost.records import write_json_atomic
from perfpost.workflow import wanted_attempt


def leave(root: Path, host: str, attempt: int, status: str | None) -> None:
    d = root / paths.cell_dir("e", "a=1", host, 1, attempt)
    d.mkdir(parents=True, exist_ok=True)
    if status:
        write_json_atomic(d / "record.json", {"schema_version": 1, "status": status})


def test_a_cell_never_tried_wants_attempt_1(tmp_path):
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path) == 1


def test_done_and_skipped_cells_are_finished(tmp_path):
    leave(tmp_path, "h1", 1, "done")
    leave(tmp_path, "h2", 1, "skipped")
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path) == 1
    assert wanted_attempt("e", "a=1", "h2", 1, tmp_path) == 1


def test_failed_or_interrupted_cells_get_a_new_attempt(tmp_path):
    leave(tmp_path, "h1", 1, "failed")
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path) == 2
    leave(tmp_path, "h1", 2, None)  # interrupted: a directory without a record
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path) == 3
    leave(tmp_path, "h1", 3, "done")
    assert wanted_attempt("e", "a=1", "h1", 1, tmp_path) == 3


def test_a_cell_started_together_is_finished_only_on_every_host(tmp_path):
    leave(tmp_path, "h1", 1, "done")
    leave(tmp_path, "h2", 1, "failed")
    assert wanted_attempt("e", "a=1", ["h1", "h2"], 1, tmp_path) == 2
    leave(tmp_path, "h1", 2, "done")
    leave(tmp_path, "h2", 2, "done")
    assert wanted_attempt("e", "a=1", ["h1", "h2"], 1, tmp_path) == 2
    assert wanted_attempt("e", "a=1", ["h1", "h2", "h3"], 1, tmp_path) == 3
