#!/usr/bin/env python3
"""Draws bus bandwidth against message size (np 2, float32 sum allreduce) from one compare.sh run:
hvdc, Open MPI ob1, Open MPI pml ucx and the zero-copy limit measured in the same run. Each point
is the median of the run's invocations; a vertical bar spans their minimum to maximum. Writes the
SVG by hand (standard library only).

usage: plot_allreduce.py COMPARE_JSON OUT_SVG
"""
import json
import math
import sys
from xml.sax.saxutils import escape

SERIES = [  # compare.json series, legend, colour, dashed
    ("hvdc", "hvdc", "#d62728", False),
    ("ob1", "Open MPI ob1", "#1f77b4", False),
    ("ucx", "Open MPI pml ucx", "#2ca02c", False),
    ("limit_busbw", "zero-copy limit (shared memory, in place)", "#555555", True),
]
WIDTH, HEIGHT = 760, 470
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 50, 110


def size_label(n):
    if n >= 1 << 20:
        return "%dM" % (n >> 20)
    return "%dK" % (n >> 10) if n >= 1 << 10 else str(n)


def points(doc, name):
    """[(size, median, low, high)] for one series, by size."""
    raw = doc["raw"].get(name, {})
    out = []
    for key, by_invocation in raw.items():
        if key == "value":
            continue
        values = sorted(by_invocation.values())
        out.append((int(key), doc["median"][name][key], values[0], values[-1]))
    return sorted(out)


class Axes:
    """Log-2 sizes across, linear GB/s up."""

    def __init__(self, sizes, top_value):
        self.lo, self.hi = math.log2(min(sizes)), math.log2(max(sizes))
        if self.hi == self.lo:
            self.lo, self.hi = self.lo - 1, self.hi + 1
        self.y_step = nice_step(top_value / 6)
        self.y_max = self.y_step * math.ceil(top_value * 1.05 / self.y_step)

    def x(self, size):
        return LEFT + (math.log2(size) - self.lo) / (self.hi - self.lo) * (WIDTH - LEFT - RIGHT)

    def y(self, value):
        return HEIGHT - BOTTOM - value / self.y_max * (HEIGHT - TOP - BOTTOM)


def nice_step(raw):
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if factor * magnitude >= raw:
            return factor * magnitude
    return 10 * magnitude


def grid(axes, sizes):
    parts = []
    value = 0.0
    while value <= axes.y_max + 1e-9:
        y = axes.y(value)
        parts.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>'
                     % (LEFT, y, WIDTH - RIGHT, y))
        parts.append('<text x="%d" y="%.1f" text-anchor="end" font-size="11">%g</text>'
                     % (LEFT - 6, y + 4, round(value, 3)))
        value += axes.y_step
    for size in sizes:
        x = axes.x(size)
        parts.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e5e5"/>'
                     % (x, TOP, x, HEIGHT - BOTTOM))
        parts.append('<text x="%.1f" y="%d" text-anchor="middle" font-size="11">%s</text>'
                     % (x, HEIGHT - BOTTOM + 16, size_label(size)))
    parts.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>'
                 % (LEFT, TOP, WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM))
    parts.append('<text x="%d" y="%d" text-anchor="middle" font-size="12">message size '
                 '(bytes per rank, log scale)</text>'
                 % ((LEFT + WIDTH - RIGHT) // 2, HEIGHT - BOTTOM + 36))
    parts.append('<text x="18" y="%d" text-anchor="middle" font-size="12" '
                 'transform="rotate(-90 18 %d)">bus bandwidth (GB/s)</text>'
                 % ((TOP + HEIGHT - BOTTOM) // 2, (TOP + HEIGHT - BOTTOM) // 2))
    return parts


def curve(axes, pts, colour, dashed):
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    path = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", axes.x(s), axes.y(m))
                    for i, (s, m, _, _) in enumerate(pts))
    parts = ['<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>' % (path, colour, dash)]
    for s, m, lo, hi in pts:
        x = axes.x(s)
        if hi > lo:
            parts.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>'
                         % (x, axes.y(lo), x, axes.y(hi), colour))
        parts.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x, axes.y(m), colour))
    return parts


def legend(entries):
    parts = []
    for i, (label, colour, dashed) in enumerate(entries):
        x, y = LEFT + (i % 2) * 320, HEIGHT - 50 + (i // 2) * 18
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        parts.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                     % (x, y - 4, x + 24, y - 4, colour, dash))
        parts.append('<text x="%d" y="%d" font-size="12">%s</text>' % (x + 30, y, escape(label)))
    return parts


def draw(doc):
    series = [(points(doc, name), label, colour, dashed)
              for name, label, colour, dashed in SERIES]
    series = [s for s in series if s[0]]
    if not series:
        raise SystemExit("plot_allreduce.py: the run has no allreduce bandwidth figures")
    sizes = sorted({p[0] for pts, _, _, _ in series for p in pts})
    axes = Axes(sizes, max(p[3] for pts, _, _, _ in series for p in pts))
    m = doc["machine"]
    title = "np 2 float32 sum allreduce, median of %d: %s, %s cores, %s, commit %s" % (
        doc["invocations"], m["cpu"], m["cores"], m["date_utc"], m["commit"])
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'viewBox="0 0 %d %d" font-family="sans-serif">' % (WIDTH, HEIGHT, WIDTH, HEIGHT),
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="%d" y="24" font-size="13">%s</text>' % (LEFT, escape(title))]
    parts += grid(axes, sizes)
    for pts, _, colour, dashed in series:
        parts += curve(axes, pts, colour, dashed)
    parts += legend([(label, colour, dashed) for _, label, colour, dashed in series])
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    svg = draw(doc)
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write(svg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
