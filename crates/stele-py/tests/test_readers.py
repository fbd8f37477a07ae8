"""Read-only databases beside a writer process, and handles across fork()."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys

import pytest

import stele


def test_a_reader_process_sees_commits_after_refresh(tmp_path):
    path = tmp_path / "db"
    with stele.open(path) as db:
        db["c"]["a"] = {"n": 1}
        with stele.open(path, readonly=True) as reader:
            assert reader.readonly and not db.readonly
            assert reader["c"]["a"].to_python() == {"n": 1}
            db["c"]["a"] = {"n": 2}
            db["c"]["b"] = {"n": 3}
            # Nothing moves until the refresh.
            assert reader["c"]["a"].to_python() == {"n": 1}
            snap = reader.snapshot()
            assert reader.refresh() == db.snapshot().seq
            assert reader["c"]["a"].to_python() == {"n": 2}
            assert len(reader["c"]) == 2
            assert snap["c"]["a"].to_python() == {"n": 1}
            # Writes are refused, saying why.
            with pytest.raises(stele.SteleError, match="read-only"):
                reader["c"]["x"] = {}
            with pytest.raises(stele.SteleError, match="read-only"):
                reader.batch()
        # Another process reads beside this writer.
        code = (
            "import stele, sys\n"
            f"db = stele.open({str(path)!r}, readonly=True)\n"
            "print(db['c']['b'].to_python()['n'], db.stats()['c']['documents'])\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["3", "2"]
        # A second writer is still refused.
        code = f"import stele\nstele.open({str(path)!r})\n"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode != 0 and "in use by pid" in out.stderr


def test_readonly_needs_a_database(tmp_path):
    with pytest.raises(stele.SteleError, match="no database"):
        stele.open(tmp_path / "nothing", readonly=True)
    assert not (tmp_path / "nothing").exists()


def _child_uses_parent_handle(db, queue):
    try:
        db["c"]["a"]
        queue.put("no error")
    except stele.SteleError as e:
        queue.put(str(e))


def _child_opens_its_own(path, queue):
    with stele.open(path, readonly=True) as db:
        queue.put(db["c"]["a"].to_python())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("readonly", [False, True])
def test_a_handle_is_not_shared_across_fork(tmp_path, readonly):
    path = tmp_path / "db"
    with stele.open(path) as writer:
        writer["c"]["a"] = {"n": 1}
        db = stele.open(path, readonly=True) if readonly else writer
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_child_uses_parent_handle, args=(db, queue))
        child.start()
        message = queue.get(timeout=30)
        child.join()
        assert "is used in process" in message and "after the fork" in message, message
        # The pattern the docs show: each worker opens the database itself.
        child = ctx.Process(target=_child_opens_its_own, args=(str(path), queue))
        child.start()
        assert queue.get(timeout=30) == {"n": 1}
        child.join()
        assert child.exitcode == 0
        # The parent's handle still works.
        assert db["c"]["a"].to_python() == {"n": 1}


def _child_closes_parent_handle(db, queue):
    try:
        db.close()
        queue.put("closed")
    except stele.SteleError as e:
        queue.put(str(e))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_closing_the_writer_writes_nothing(tmp_path):
    # The child's copy of the writer must not checkpoint or cut the log the parent writes.
    path = tmp_path / "db"
    db = stele.open(path)
    db["c"]["a"] = {"n": 1}
    db.checkpoint()  # the log is empty: the idle checkpoint has nothing to write either

    def files():
        return sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*") if p.is_file())

    before = files()
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child_closes_parent_handle, args=(db, queue))
    child.start()
    message = queue.get(timeout=30)
    child.join()
    assert "is used in process" in message, message
    assert files() == before
    db["c"]["b"] = {"n": 2}
    db.close()
    with stele.open(path, readonly=True) as again:
        assert again["c"]["a"].to_python() == {"n": 1}
        assert again["c"]["b"].to_python() == {"n": 2}


def _child_reads_parent_snapshot(snap, it, queue):
    errors = []
    for read in (lambda: snap["c"]["a"], lambda: snap.collections(), lambda: next(it)):
        try:
            read()
            errors.append("no error")
        except stele.SteleError as e:
            errors.append(str(e))
    queue.put(errors)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_snapshot_is_not_shared_across_fork(tmp_path):
    # A snapshot (and an iterator, which holds one) reads through the database's block
    # cache, whose lock another thread may have held when the child was forked.
    with stele.open(tmp_path / "db") as db:
        db["c"]["a"] = {"n": 1}
        db["c"]["b"] = {"n": 2}
        snap = db.snapshot()
        it = iter(db["c"].values())
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_child_reads_parent_snapshot, args=(snap, it, queue))
        child.start()
        errors = queue.get(timeout=30)
        child.join()
        assert len(errors) == 3
        for message in errors:
            assert "is used in process" in message and "after the fork" in message, message
        # The parent's snapshot and iterator still work.
        assert snap["c"]["a"].to_python() == {"n": 1}
        assert next(it).to_python() == {"n": 1}
