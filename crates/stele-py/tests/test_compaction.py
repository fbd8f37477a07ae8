"""compact_base_ratio: the compactions checkpoints start leave a large collection's packed
blocks alone while the changes above them are small (ratio 8, the default), and repack
them with ratio 0."""

import random
import time

import stele

DOCS = 20_000


def _settled(db, name, deadline_s=60.0):
    """Checkpoints until the background compaction the checkpoints started is swapped in."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        db.checkpoint()
        stats = db.stats()[name]
        if stats["layers"] <= 2:
            return stats
        time.sleep(0.05)
    raise AssertionError(f"no compaction within {deadline_s} s: {db.stats()[name]}")


def _run(path, ratio):
    with stele.open(path, compact_layers=2, compact_base_ratio=ratio) as db:
        c = db["c"]
        # 20,000 documents of random text: blocks of about 1 MB in all, which the tables of
        # a few small changes (a few KiB each) stay well under 1/8 of.
        rng = random.Random(1)
        with db.batch() as b:
            for i in range(DOCS):
                b.put("c", f"k{i:05}", {"i": i, "h": f"{rng.getrandbits(160):040x}"})
        db.compact()
        before = db.stats()["c"]
        for round_ in range(1, 5):
            for k in range(10):
                c[f"k{(round_ * 997 + k * 131) % DOCS:05}"] = {"i": -round_, "k": k}
            db.checkpoint()
        after = _settled(db, "c")
        assert len(c) == DOCS and c[f"k{(4 * 997) % DOCS:05}"]["i"] == -4
    return before, after


def test_small_changes_leave_the_blocks_and_ratio_zero_repacks(tmp_path):
    before, after = _run(tmp_path / "tiered", 8)
    assert before["packed_blocks"] > 2
    assert after["pack_bytes"] == before["pack_bytes"], (before, after)
    before, after = _run(tmp_path / "full", 0)
    assert after["pack_bytes"] != before["pack_bytes"], (before, after)


def test_a_negative_ratio_is_refused(tmp_path):
    try:
        stele.open(tmp_path, compact_base_ratio=-1)
    except OverflowError:
        return
    raise AssertionError("compact_base_ratio=-1 was accepted")
