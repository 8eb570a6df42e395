"""An SVG timeline of a run, written directly (no plotting dependency). Pure.

Top panel: live runners by phase as stacked areas (pending, running, finished,
deleting), the published ``spec.replicas`` and the demand (jobs assigned to the scale
set) as step lines, a red cross on the time axis for every wasted runner (at its
deletion) and dotted verticals for faults and restarts. Bottom panel: the published
``spec.patchID`` and the controller's marker ``status.finishedRunnerCleanupPatchID``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from xml.sax.saxutils import escape

from simulation.trace import Mark, Sample, Trace, wasted_runners

WIDTH, HEIGHT = 960, 590
LEFT, RIGHT = 64, 24
TOP_PANEL = (48, 340)  # y of the top and bottom edge
BOTTOM_PANEL = (390, 500)

PHASES = (
    ("pending", "#9ecae1"),
    ("running", "#74c476"),
    ("finished", "#bdbdbd"),
    ("deleting", "#fdae6b"),
)

Scale = Callable[[float], float]


def render_svg(trace: Trace) -> str:
    """The whole SVG document for ``trace``."""
    samples = trace.samples
    end = max(trace.elapsed, samples[-1].at if samples else 0.0, 1.0)
    top = max([s.live_runners for s in samples] + [s.replicas for s in samples] + [1])
    top = max(top, max((s.assigned_jobs for s in samples), default=0))
    x = _linear(0.0, end, LEFT, WIDTH - RIGHT)
    y = _linear(0.0, top * 1.1, TOP_PANEL[1], TOP_PANEL[0])
    ids = [s.patch_id for s in samples] + [s.marker for s in samples] + [1]
    y_id = _linear(0.0, max(ids) * 1.1, BOTTOM_PANEL[1], BOTTOM_PANEL[0])
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        _text(
            LEFT,
            24,
            f"{trace.label}: seed {trace.seed}, min {trace.min_runners}, max {trace.max_runners}",
            size=15,
            weight="bold",
        ),
        *_axes(x, y, end, top, TOP_PANEL, "runners / jobs"),
        *_stacked_phases(samples, x, y),
        _step_line(samples, x, y, lambda s: s.replicas, "#08519c", width=2),
        _step_line(samples, x, y, lambda s: s.assigned_jobs, "black", dash="5,3"),
        *_wasted_marks(trace, x),
        *_axes(x, y_id, end, max(ids), BOTTOM_PANEL, "patch ID"),
        _step_line(samples, x, y_id, lambda s: s.patch_id, "#6a51a3", width=1.5),
        _step_line(samples, x, y_id, lambda s: s.marker, "#d94801", dash="2,2"),
        *_fault_marks(trace.marks, x),
        *_legend(),
        "</svg>",
    ]
    return "\n".join(parts) + "\n"


def _linear(lo: float, hi: float, out_lo: float, out_hi: float) -> Scale:
    span = (hi - lo) or 1.0
    return lambda v: round(out_lo + (v - lo) / span * (out_hi - out_lo), 1)


def _text(
    x: float,
    y: float,
    text: str,
    *,
    size: int = 12,
    weight: str = "normal",
    anchor: str = "start",
    fill: str = "#333",
) -> str:
    return (
        f'<text x="{x}" y="{y}" font-size="{size}" font-weight="{weight}" '
        f'text-anchor="{anchor}" fill="{fill}">{escape(text)}</text>'
    )


def _ticks(top: float, count: int = 5) -> list[int]:
    step = max(1, round(top / count))
    return list(range(0, int(top) + 1, step))


def _axes(
    x: Scale, y: Scale, end: float, top: float, panel: tuple[int, int], title: str
) -> list[str]:
    y_top, y_bottom = panel
    out = [
        f'<line x1="{LEFT}" y1="{y_bottom}" x2="{WIDTH - RIGHT}" y2="{y_bottom}" stroke="#555"/>',
        f'<line x1="{LEFT}" y1="{y_top}" x2="{LEFT}" y2="{y_bottom}" stroke="#555"/>',
        _text(8, y_top - 6, title, weight="bold"),
    ]
    for tick in _ticks(top):
        out.append(
            f'<line x1="{LEFT - 4}" y1="{y(tick)}" x2="{WIDTH - RIGHT}" y2="{y(tick)}" '
            'stroke="#eee"/>'
        )
        out.append(_text(LEFT - 8, y(tick) + 4, str(tick), anchor="end"))
    for second in _ticks(end, 10):
        out.append(_text(x(second), y_bottom + 16, f"{second}s", anchor="middle"))
    return out


def _step_points(
    samples: Sequence[Sample], x: Scale, y: Scale, value: Callable[[Sample], float]
) -> list[tuple[float, float]]:
    points: list[tuple[float, float]] = []
    for sample in samples:
        if points:
            points.append((x(sample.at), points[-1][1]))
        points.append((x(sample.at), y(value(sample))))
    return points


def _step_line(
    samples: Sequence[Sample],
    x: Scale,
    y: Scale,
    value: Callable[[Sample], float],
    color: str,
    *,
    width: float = 1.0,
    dash: str = "",
) -> str:
    points = " ".join(f"{px},{py}" for px, py in _step_points(samples, x, y, value))
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<polyline points="{points}" fill="none" stroke="{color}" '
        f'stroke-width="{width}"{dash_attr}/>'
    )


def _stacked_phases(samples: Sequence[Sample], x: Scale, y: Scale) -> list[str]:
    out: list[str] = []
    for index in range(len(PHASES)):
        names = [name for name, _ in PHASES[: index + 1]]
        below = names[:-1]
        upper = _step_points(samples, x, y, _phase_sum(names))
        lower = _step_points(samples, x, y, _phase_sum(below))
        outline = upper + list(reversed(lower))
        if outline:
            points = " ".join(f"{px},{py}" for px, py in outline)
            out.append(f'<polygon points="{points}" fill="{PHASES[index][1]}" stroke="none"/>')
    return out


def _phase_sum(names: Sequence[str]) -> Callable[[Sample], float]:
    return lambda sample: sum(getattr(sample, name) for name in names)


def _wasted_marks(trace: Trace, x: Scale) -> list[str]:
    out: list[str] = []
    base = TOP_PANEL[1]
    for runner in wasted_runners(trace):
        if runner.deleted_at is None:
            continue
        cx = x(runner.deleted_at)
        out.append(
            f'<path d="M{cx - 5},{base - 5} L{cx + 5},{base + 5} M{cx - 5},{base + 5} '
            f'L{cx + 5},{base - 5}" stroke="#cb181d" stroke-width="2">'
            f"<title>wasted: {escape(runner.name)}</title></path>"
        )
    return out


def _fault_marks(marks: Sequence[Mark], x: Scale) -> list[str]:
    out: list[str] = []
    for index, mark in enumerate(marks):
        mx = x(mark.at)
        out.append(
            f'<line x1="{mx}" y1="{TOP_PANEL[0]}" x2="{mx}" y2="{BOTTOM_PANEL[1]}" '
            'stroke="#cb181d" stroke-dasharray="1,3"/>'
        )
        out.append(
            _text(mx + 3, TOP_PANEL[0] + 12 + 13 * (index % 4), mark.label, size=10, fill="#cb181d")
        )
    return out


def _legend() -> list[str]:
    entries = [(name, color, "area") for name, color in PHASES] + [
        ("replicas", "#08519c", "line"),
        ("assigned jobs", "black", "line"),
        ("wasted runner", "#cb181d", "cross"),
        ("patch ID", "#6a51a3", "line"),
        ("marker", "#d94801", "line"),
    ]
    out: list[str] = []
    for index, (name, color, kind) in enumerate(entries):
        lx, ly = LEFT + (index % 5) * 170, HEIGHT - 44 + (index // 5) * 20
        if kind == "area":
            out.append(f'<rect x="{lx}" y="{ly - 9}" width="14" height="10" fill="{color}"/>')
        elif kind == "cross":
            out.append(
                f'<path d="M{lx},{ly - 9} L{lx + 10},{ly + 1} M{lx},{ly + 1} '
                f'L{lx + 10},{ly - 9}" stroke="{color}" stroke-width="2"/>'
            )
        else:
            out.append(
                f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 14}" y2="{ly - 4}" '
                f'stroke="{color}" stroke-width="2"/>'
            )
        out.append(_text(lx + 20, ly, name))
    return out
