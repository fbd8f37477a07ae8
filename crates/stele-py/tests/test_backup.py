"""Backups from Python: db.backup(dest) beside writes, stele.verify, stele.restore, replicas
opened read-only."""

from __future__ import annotations

import pytest

import stele


def test_backup_verify_restore_and_a_read_only_replica(tmp_path):
    src, bk = tmp_path / "db", tmp_path / "bk"
    with stele.open(src) as db:
        for i in range(50):
            db["c"][f"k{i}"] = {"n": i}
        first = db.backup(bk, copy=True)
        assert first["version"] == db.snapshot().seq
        assert first["tables_linked"] == 0
        db["c"]["k0"] = {"n": -1}
        again = db.backup(bk)
        assert again["version"] == first["version"] + 1
        assert again["tables_copied"] + again["tables_linked"] <= 1
        report = stele.verify(bk)
        assert report["ok"] and report["problems"] == []
        assert report["last_version"] == again["version"]
        with stele.open(bk, readonly=True) as replica:
            assert replica["c"]["k0"].to_python() == {"n": -1}
            db["c"]["k1"] = {"n": -2}
            db.backup(bk)
            replica.refresh()
            assert replica["c"]["k1"].to_python() == {"n": -2}
    out = tmp_path / "out"
    assert stele.restore(bk, out, at=first["version"]) == first["version"]
    with stele.open(out, readonly=True) as old:
        assert old["c"]["k0"].to_python() == {"n": 0}
        assert len(old["c"]) == 50
    with pytest.raises(stele.SteleError, match="exists"):
        stele.restore(bk, out)
    with pytest.raises(stele.SteleError, match="holds no version"):
        stele.restore(bk, tmp_path / "x", at=10**6)
    with pytest.raises(stele.SteleError, match="does not parse"):
        stele.restore(bk, tmp_path / "x", at="yesterday")


def test_verify_reports_a_damaged_file_with_its_path(tmp_path):
    src, bk = tmp_path / "db", tmp_path / "bk"
    with stele.open(src) as db:
        db["c"]["a"] = {"n": 1}
        db.compact()
        db.backup(bk, copy=True)
    table = max((bk / "tables").glob("*.stt"), key=lambda p: p.stat().st_size)
    data = bytearray(table.read_bytes())
    data[0] ^= 0xFF
    table.write_bytes(bytes(data))
    report = stele.verify(bk)
    assert not report["ok"]
    assert any(str(p["path"]) == str(table) and p["damage"] for p in report["problems"])
    with pytest.raises(stele.SteleError, match="cannot give version"):
        stele.restore(bk, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_rate_limited_backup_is_whole_and_a_bad_rate_a_clear_error(tmp_path):
    src, bk = tmp_path / "db", tmp_path / "bk"
    with stele.open(src) as db:
        for i in range(200):
            db["c"][f"k{i}"] = {"n": i, "pad": "x" * 200}
        db.checkpoint()
        for rate in (0, "fast", "-3MB/s"):
            with pytest.raises(stele.SteleError, match="backup rate limit"):
                db.backup(bk, copy=True, max_rate=rate)
        assert not bk.exists()
        shipped = db.backup(bk, copy=True, max_rate=0.5)  # MB/s
        assert shipped["version"] == db.snapshot().seq and shipped["tables_copied"] >= 1
        assert db.backup(tmp_path / "bk2", copy=True, max_rate="64KiB/s")["tables_copied"] >= 1
        assert db.backup(tmp_path / "bk3", copy=True, max_rate="none")["tables_copied"] >= 1
    assert stele.verify(bk)["ok"]
    with stele.open(bk, readonly=True) as replica:
        assert len(replica["c"]) == 200
