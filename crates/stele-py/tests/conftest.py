"""Shared helpers: where the shared data is, and small slices of it (never copied)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def data_dir() -> Path:
    return Path(os.environ.get("STELE_DATA", REPO.parent / "shared" / "data"))


def first_lines(relative: str, n: int) -> list[bytes]:
    """The first `n` lines of a zstd-compressed JSON Lines file of the shared data."""
    path = data_dir() / relative
    if not path.exists():
        pytest.skip(f"shared data {path} missing")
    with subprocess.Popen(["zstd", "-dc", str(path)], stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line.rstrip(b"\n"))
            if len(lines) == n:
                break
        proc.kill()
    return lines


@pytest.fixture(scope="session")
def corpus() -> dict[str, bytes]:
    """Every JSON file of the shared JSON corpus, by name."""
    folder = data_dir() / "json-corpus"
    if not folder.is_dir():
        pytest.skip(f"shared data {folder} missing")
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.json"))}
