#!/usr/bin/env python3
"""Draws the figures of BENCHMARKS.md as SVG bar charts, with no third-party package.

    python3 scripts/plots.py            # reads docs/plots/data.csv, writes docs/plots/<chart>.svg

data.csv holds one measured figure per row, copied from the bench output recorded in
BENCHMARKS.md (which says which GPU, date and run each comes from):

    chart,title,label,value,unit,kind
    launch,Host cost per launch (H100),raw cuLaunchKernel,3043,ns,reference

`kind` colours the bar: `ours` (cuda-embed), `reference` (raw driver, C++, CUB, copy limit) or
`other` (CuPy, cudarc, ...). Bars keep the file's order; each chart gets its own SVG.
"""
import csv
import html
import os
import sys

COLOURS = {"ours": "#2b7bba", "reference": "#7f7f7f", "other": "#e08a2c"}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def chart_svg(title, rows):
    unit = rows[0]["unit"]
    width, left, right, bar, gap, top = 760, 330, 110, 22, 8, 46
    height = top + len(rows) * (bar + gap) + 30
    vmax = max(float(r["value"]) for r in rows) or 1.0
    span = width - left - right
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="13">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{html.escape(title)}</text>',
    ]
    for i, r in enumerate(rows):
        v = float(r["value"])
        y = top + i * (bar + gap)
        w = max(1.0, span * v / vmax)
        colour = COLOURS.get(r["kind"], COLOURS["other"])
        out.append(f'<text x="{left - 8}" y="{y + bar * 0.72}" text-anchor="end">{html.escape(r["label"])}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar}" fill="{colour}"/>')
        shown = f"{v:g} {unit}"
        out.append(f'<text x="{left + w + 6:.1f}" y="{y + bar * 0.72}">{html.escape(shown)}</text>')
    legend_y = height - 10
    x = left
    for kind, name in (("ours", "cuda-embed"), ("reference", "reference"), ("other", "other libraries")):
        out.append(f'<rect x="{x}" y="{legend_y - 10}" width="12" height="12" fill="{COLOURS[kind]}"/>')
        out.append(f'<text x="{x + 16}" y="{legend_y}">{name}</text>')
        x += 150
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "plots", "data.csv")
    charts = {}
    with open(data, newline="") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            charts.setdefault(row["chart"], []).append(row)
    for name, rows in charts.items():
        units = {r["unit"] for r in rows}
        if len(units) != 1:
            sys.exit(f"chart {name}: one unit per chart, found {sorted(units)}")
        path = os.path.join(os.path.dirname(data), f"{name}.svg")
        with open(path, "w") as f:
            f.write(chart_svg(rows[0]["title"], rows))
        print(f"wrote {os.path.relpath(path, ROOT)} ({len(rows)} bars)")


if __name__ == "__main__":
    main()
