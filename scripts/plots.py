#!/usr/bin/env python3
"""Draw the plots of docs/benchmarks.md from the benchmark outputs in docs/results/.

    python3 scripts/plots.py            # (re)write docs/plots/*.svg
    python3 scripts/plots.py --check    # exit 1 if a committed SVG differs from what would be written

Standard library only (Python 3.10+). The inputs are the markdown tables the benchmarks print,
saved as printed under docs/results/. A table this script needs and cannot find is an error that
names the file and the table; nothing is skipped silently. The output is deterministic: the same
inputs give the same bytes (fixed float formatting, inputs in a fixed order).
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
PLOTS = ROOT / "docs" / "plots"


class InputError(Exception):
    """A results file or a table in it is missing or malformed."""


# ---------------------------------------------------------------------------------------------
# Markdown tables


@dataclass
class Table:
    path: Path
    heading: str  # the last markdown heading above the table ("" if none)
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def col(self, name: str) -> int:
        try:
            return self.header.index(name)
        except ValueError:
            raise InputError(
                f"{rel(self.path)}: the table with header | {' | '.join(self.header)} | "
                f"has no column '{name}'"
            ) from None


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def split_row(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return [cell.strip() for cell in line.split("|")]


def is_separator(cells: list[str]) -> bool:
    return bool(cells) and all(c and set(c) <= set("-: ") for c in cells)


def read_tables(path: Path) -> list[Table]:
    if not path.is_file():
        raise InputError(f"{rel(path)}: file not found (the benchmark's output, saved as printed)")
    lines = path.read_text(encoding="utf-8").splitlines()
    tables: list[Table] = []
    heading = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if (
            line.lstrip().startswith("|")
            and i + 1 < len(lines)
            and is_separator(split_row(lines[i + 1]))
        ):
            table = Table(path, heading, split_row(line))
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                table.rows.append(split_row(lines[i]))
                i += 1
            tables.append(table)
            continue
        i += 1
    return tables


def find_table(name: str, columns: list[str], heading: str | None = None) -> Table:
    """The first table of docs/results/<name> whose header has every one of `columns`
    (and whose heading contains `heading`, if given)."""
    path = RESULTS / name
    for table in read_tables(path):
        if heading is not None and heading not in table.heading:
            continue
        if all(c in table.header for c in columns):
            return table
    where = f" under a heading containing '{heading}'" if heading else ""
    raise InputError(
        f"{rel(path)}: no table{where} with the header columns | {' | '.join(columns)} | "
        "(was the benchmark's output format changed? update scripts/plots.py)"
    )


def data_rows(table: Table) -> list[list[str]]:
    """Rows without the bold summary rows (geometric mean, all)."""
    return [r for r in table.rows if r and not r[0].startswith("**")]


def number(cell: str, table: Table) -> float:
    """The first figure of a cell: '1.03 (1.00×)' -> 1.03, '185k' -> 185000, '1,024' -> 1024."""
    token = cell.replace(",", "").split()[0] if cell.strip() else ""
    scale = 1.0
    if token.endswith("k"):
        token, scale = token[:-1], 1e3
    if token.endswith("x") or token.endswith("×"):
        token = token[:-1]
    try:
        return float(token) * scale
    except ValueError:
        raise InputError(f"{rel(table.path)}: '{cell}' is not a number (table '{table.heading}')") from None


def numbers(cell: str, table: Table) -> list[float]:
    """Every figure of a cell listing runs: '185k, 206k, 196k' -> [185000, 206000, 196000]."""
    return [number(part, table) for part in cell.split(",") if part.strip()]


def short(name: str) -> str:
    for prefix in ("mongodb-samples/", "json-corpus/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name.replace("__", " ").removesuffix(".json")


# ---------------------------------------------------------------------------------------------
# SVG: horizontal grouped bar charts

COLORS = ["#1b6f8a", "#e07b39", "#7a9a3a", "#9b5fb0", "#c44e52", "#8c8c8c"]
FONT = "font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\""


def fmt(v: float) -> str:
    """Fixed formatting of coordinates."""
    s = f"{v:.1f}"
    return "0.0" if s == "-0.0" else s


def tick_label(v: float) -> str:
    if v >= 1e6 and v % 1e6 == 0:
        return f"{v / 1e6:.0f}M"
    if v >= 1e4 and v % 1e3 == 0:
        return f"{v / 1e3:.0f}k"
    if v == int(v):
        return f"{int(v)}"
    return f"{v:g}"


@dataclass
class Chart:
    title: str
    subtitle: str
    axis: str  # x axis label
    categories: list[str]
    # (legend name, one value per category, the value as the benchmark printed it)
    series: list[tuple[str, list[float | None], list[str]]]
    log: bool = False
    refs: list[tuple[float, str]] = field(default_factory=list)  # vertical lines
    labels: bool = False  # print each bar's value at its end


def scale_for(chart: Chart) -> tuple[float, float, list[float]]:
    values = [v for _, vs, _ in chart.series for v in vs if v is not None]
    values += [r for r, _ in chart.refs]
    hi = max(values)
    if chart.log:
        lo = min(v for v in values if v > 0)
        lo_e = math.floor(math.log10(lo))
        hi_e = math.ceil(math.log10(hi))
        steps = [float(f"{m * 10.0**e:.6g}") for e in range(lo_e, hi_e + 1) for m in (1, 2, 5)]
        start = max(t for t in steps if t <= lo)
        end = min(t for t in steps if t >= hi * 1.15)  # room for the value labels
        ticks = [t for t in steps if start <= t <= end]
        if math.log10(end / start) > 3:  # many decades: powers of ten (and the ends) only
            ticks = [t for t in ticks if t in (start, end) or f"{t:.6g}".lstrip("0.").startswith("1")]
        return start, end, ticks
    raw = hi / 5
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    top = math.ceil(hi / step) * step
    ticks = [round(i * step, 10) for i in range(int(round(top / step)) + 1)]
    return 0.0, top, ticks


def render(chart: Chart) -> str:
    n_series = len(chart.series)
    bar_h = 9 if n_series > 2 else 11
    group_h = n_series * bar_h + 8
    label_w = 8 + 6.6 * max(len(c) for c in chart.categories)
    left = max(150.0, label_w)
    plot_w = 560.0
    right = 90.0 if chart.labels else 30.0
    top = 50.0 + 12.0 * len(chart.refs)
    legend_h = 22.0
    plot_h = group_h * len(chart.categories)
    width = left + plot_w + right
    height = top + plot_h + 44 + legend_h
    lo, hi, ticks = scale_for(chart)

    def x(v: float) -> float:
        if chart.log:
            v = max(v, lo)
            return left + plot_w * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        return left + plot_w * (v - lo) / (hi - lo)

    out: list[str] = []
    out.append(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{fmt(width)}" height="{fmt(height)}" '
        f'viewBox="0 0 {fmt(width)} {fmt(height)}" {FONT} font-size="11">'
    )
    out.append(f'<rect x="0" y="0" width="{fmt(width)}" height="{fmt(height)}" fill="#ffffff"/>')
    out.append(f'<text x="{fmt(left)}" y="20" font-size="14" font-weight="bold">{escape(chart.title)}</text>')
    out.append(f'<text x="{fmt(left)}" y="37" fill="#444444">{escape(chart.subtitle)}</text>')
    # grid and ticks
    for t in ticks:
        tx = x(t)
        out.append(
            f'<line x1="{fmt(tx)}" y1="{fmt(top)}" x2="{fmt(tx)}" y2="{fmt(top + plot_h)}" '
            'stroke="#dddddd" stroke-width="1"/>'
        )
        out.append(
            f'<text x="{fmt(tx)}" y="{fmt(top + plot_h + 15)}" text-anchor="middle" '
            f'fill="#333333">{escape(tick_label(t))}</text>'
        )
    out.append(
        f'<line x1="{fmt(left)}" y1="{fmt(top + plot_h)}" x2="{fmt(left + plot_w)}" '
        f'y2="{fmt(top + plot_h)}" stroke="#333333" stroke-width="1"/>'
    )
    out.append(
        f'<line x1="{fmt(left)}" y1="{fmt(top)}" x2="{fmt(left)}" y2="{fmt(top + plot_h)}" '
        'stroke="#333333" stroke-width="1"/>'
    )
    axis = chart.axis + (" (log scale)" if chart.log else "")
    out.append(
        f'<text x="{fmt(left + plot_w / 2)}" y="{fmt(top + plot_h + 32)}" text-anchor="middle">'
        f"{escape(axis)}</text>"
    )
    # bars (their value labels go on top of the reference lines, below)
    value_labels: list[str] = []
    for ci, cat in enumerate(chart.categories):
        gy = top + ci * group_h + 4
        out.append(
            f'<text x="{fmt(left - 6)}" y="{fmt(gy + n_series * bar_h / 2 + 4)}" '
            f'text-anchor="end">{escape(cat)}</text>'
        )
        for si, (name, values, texts) in enumerate(chart.series):
            v = values[ci]
            text = texts[ci]
            if v is None:
                continue
            y = gy + si * bar_h
            x0 = x(lo) if chart.log else x(0)
            w = max(x(v) - x0, 0.5)
            out.append(
                f'<rect x="{fmt(x0)}" y="{fmt(y)}" width="{fmt(w)}" height="{fmt(bar_h - 1)}" '
                f'fill="{COLORS[si % len(COLORS)]}"><title>{escape(cat)}, {escape(name)}: '
                f"{escape(text)}</title></rect>"
            )
            if chart.labels:
                value_labels.append(
                    f'<text x="{fmt(x0 + w + 3)}" y="{fmt(y + bar_h - 2)}" font-size="8" fill="#333333" '
                    f'paint-order="stroke" stroke="#ffffff" stroke-width="2">{escape(text)}</text>'
                )
    # reference lines
    for ri, (value, label) in enumerate(chart.refs):
        rx = x(value)
        out.append(
            f'<line x1="{fmt(rx)}" y1="{fmt(top - 6)}" x2="{fmt(rx)}" y2="{fmt(top + plot_h)}" '
            'stroke="#c00000" stroke-width="1.5" stroke-dasharray="5,3"/>'
        )
        out.append(
            f'<text x="{fmt(rx + 3)}" y="{fmt(top - 8 - 12 * (len(chart.refs) - 1 - ri))}" fill="#c00000" '
            f'paint-order="stroke" stroke="#ffffff" stroke-width="3">{escape(label)}</text>'
        )
    out.extend(value_labels)
    # legend
    ly = height - 12
    lx = left
    for si, (name, _, _) in enumerate(chart.series):
        out.append(
            f'<rect x="{fmt(lx)}" y="{fmt(ly - 9)}" width="10" height="10" '
            f'fill="{COLORS[si % len(COLORS)]}"/>'
        )
        out.append(f'<text x="{fmt(lx + 14)}" y="{fmt(ly)}">{escape(name)}</text>')
        lx += 24 + 6.6 * len(name)
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# The plots


def first(cell: str) -> str:
    """The first figure of a cell as printed: '1.03 (1.00×)' -> '1.03'."""
    return cell.split()[0] if cell.strip() else ""


def series_of(table: Table, rows: list[list[str]], columns: list[tuple[str, str]]):
    return [
        (legend, [number(r[table.col(c)], table) for r in rows], [first(r[table.col(c)]) for r in rows])
        for legend, c in columns
    ]


def doc_plots() -> dict[str, str]:
    out = {}
    peers = [("Stele", "ours"), ("sonic-rs", "sonic-rs"), ("simd-json", "simd-json"), ("serde_json", "serde_json")]
    for key, heading, what in (
        ("doc-convert-corpus", "JSON corpus (whole files)", "json-corpus files (whole files)"),
        ("doc-convert-collections", "collections (one document per line)", "collections, one document per line"),
    ):
        t = find_table("doc.md", ["input", "ours", "serde_json", "sonic-rs", "simd-json"], heading)
        rows = data_rows(t)
        out[key] = render(Chart(
            title=f"JSON to document: {what}",
            subtitle="MB/s of JSON input, higher is better; stele-bench doc at dee14a9, 2 vCPU, no target-cpu",
            axis="MB/s",
            categories=[short(r[t.col("input")]) for r in rows],
            series=series_of(t, rows, peers),
        ))
    t = find_table("doc.md", ["collection", "ours cached", "sonic get", "sonic many", "serde_json"])
    rows = data_rows(t)
    out["doc-read3"] = render(Chart(
        title="Reading 3 fields from every document",
        subtitle="ns per document, lower is better; Stele reads its binary documents, the peers the JSON text",
        axis="ns per document",
        categories=[short(r[t.col("collection")]) for r in rows],
        series=series_of(t, rows, [
            ("Stele (path set)", "ours cached"),
            ("sonic-rs get", "sonic get"),
            ("sonic-rs get_many", "sonic many"),
            ("serde_json parse + get", "serde_json"),
        ]),
        log=True,
    ))
    return out


def table_plots() -> dict[str, str]:
    out = {}
    builds: dict[str, dict] = {}
    gets: dict[str, dict] = {}
    tables: dict[str, Table] = {}

    def pick(cells: dict, keys: list, t: Table):
        values = [number(cells[k], t) if k in cells else None for k in keys]
        return values, [first(cells[k]) if k in cells else "" for k in keys]

    for set_name in ("npm", "npm14"):
        heading = f"Set `{set_name}`"
        tb = find_table("table.md", ["store", "input", "build s"], heading)
        builds[set_name] = {
            (r[tb.col("store")], r[tb.col("input")]): r[tb.col("build s")] for r in data_rows(tb)
        }
        tg = find_table("table.md", ["store", "get 1t median ns"], heading)
        gets[set_name] = {r[tg.col("store")]: r[tg.col("get 1t median ns")] for r in data_rows(tg)}
        tables[set_name] = tg
        tables[set_name + "/build"] = tb
    build_keys = list(builds["npm14"])
    out["table-build"] = render(Chart(
        title="Sorted table build: 4.5M (npm) and 14.0M (npm14) keys",
        subtitle="seconds from input to a durable file, lower is better; table_bench at 76f4cd0, 2 vCPU",
        axis="build time, s",
        categories=[f"{s} ({i})" for s, i in build_keys],
        series=[(f"{n} set", *pick(builds[n], build_keys, tables[n + "/build"])) for n in ("npm", "npm14")],
        log=True,
        refs=[(4.0, "target: 14M shuffled keys in memory < 4 s")],
        labels=True,
    ))
    get_keys = list(gets["npm14"])
    out["table-get"] = render(Chart(
        title="Sorted tables: warm random get, 1 thread",
        subtitle="median ns per get, clock read included (30 ns; RocksDB 90 ns, through Python); lower is better",
        axis="ns per get",
        categories=get_keys,
        series=[(f"{n} set", *pick(gets[n], get_keys, tables[n])) for n in ("npm", "npm14")],
        refs=[(1000.0, "target: < 1 us")],
        labels=True,
    ))
    return out


def store_plots() -> dict[str, str]:
    out = {}
    t = find_table("store.md", ["collection", "zstd", "(disk + dicts) / zstd-3", "RavenDB-style / zstd-3"])
    rows = [r for r in data_rows(t) if r[t.col("zstd")] == "on"]
    if not rows:
        raise InputError(f"{rel(t.path)}: no rows with compression on (zstd = on)")
    out["store-size"] = render(Chart(
        title="Stored size against whole-file zstd -3 (1.0 = zstd -3 of the JSON Lines file)",
        subtitle="Stele after compact, dictionaries counted, vs RavenDB-style per-document zstd; lower is better",
        axis="size / zstd -3 of the whole file",
        categories=[short(r[t.col("collection")]) for r in rows],
        series=series_of(t, rows, [
            ("Stele (disk + dicts)", "(disk + dicts) / zstd-3"),
            ("RavenDB-style per-document zstd", "RavenDB-style / zstd-3"),
        ]),
        log=True,
        refs=[(1.0, "whole-file zstd -3"), (1.5, "target: 1.5x")],
        labels=True,
    ))
    t = find_table("store-b74dc47.md", ["collection", "docs", "ingest on", "ingest off"])
    rows = data_rows(t)
    runs = [numbers(r[t.col("ingest on")], t) for r in rows]
    printed = [[part.strip() for part in r[t.col("ingest on")].split(",")] for r in rows]
    n_runs = max(len(r) for r in runs)
    out["store-ingest"] = render(Chart(
        title="Store ingest with compression on, batches of 1,000 documents",
        subtitle="documents/s, each of three store_bench runs at b74dc47 (2026-11-25); higher is better",
        axis="documents per second",
        categories=[f"{short(r[t.col('collection')])} ({r[t.col('docs')]})" for r in rows],
        series=[
            (
                f"run {i + 1}",
                [r[i] if i < len(r) else None for r in runs],
                [r[i] if i < len(r) else "" for r in printed],
            )
            for i in range(n_runs)
        ],
        log=True,
        refs=[(150e3, "target: 150k docs/s")],
    ))
    return out


def build_all() -> dict[str, str]:
    plots: dict[str, str] = {}
    for make in (doc_plots, table_plots, store_plots):
        plots.update(make())
    return {f"{name}.svg": svg for name, svg in sorted(plots.items())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare docs/plots/*.svg with what would be written; exit 1 on any difference")
    args = parser.parse_args()
    try:
        plots = build_all()
    except InputError as e:
        print(f"plots.py: {e}", file=sys.stderr)
        return 2
    if args.check:
        bad = []
        for name, svg in plots.items():
            path = PLOTS / name
            if not path.is_file():
                bad.append(f"{rel(path)}: missing")
            elif path.read_text(encoding="utf-8") != svg:
                bad.append(f"{rel(path)}: differs from what scripts/plots.py writes")
        for path in sorted(PLOTS.glob("*.svg")):
            if path.name not in plots:
                bad.append(f"{rel(path)}: not written by scripts/plots.py (stale?)")
        for line in bad:
            print(line, file=sys.stderr)
        if bad:
            print("run `python3 scripts/plots.py` and commit docs/plots/", file=sys.stderr)
            return 1
        print(f"plots.py: {len(plots)} plots up to date")
        return 0
    PLOTS.mkdir(parents=True, exist_ok=True)
    for name, svg in plots.items():
        (PLOTS / name).write_text(svg, encoding="utf-8")
        print(f"wrote {rel(PLOTS / name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
