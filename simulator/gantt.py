"""A Gantt chart of a simulation: one row per machine, one bar per run, lost work hatched, outages greyed."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from simulator.simulate import Segment, SimResult

# bars are labelled with their job when a run has at most this many
LABEL_LIMIT = 60


def plot(result: SimResult, path: str | Path, title: str | None = None) -> Path:
    """Draw ``result`` to a PNG at ``path`` and return the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch

    machines = sorted(result.platform_of, key=lambda m: (result.platform_of[m], m))
    row = {m: i for i, m in enumerate(machines)}
    label = len(result.segments) <= LABEL_LIMIT
    # one program: tell its jobs apart instead
    by_job = len({s.algorithm for s in result.segments}) == 1
    key = (lambda s: s.job) if by_job else (lambda s: s.algorithm)
    algorithms = sorted({key(s) for s in result.segments})
    palette = plt.get_cmap("tab10" if len(algorithms) <= 10 else "tab20")
    color = {a: palette(i % palette.N) for i, a in enumerate(algorithms)}
    fig, ax = plt.subplots(figsize=(12, max(2.5, 0.45 * len(machines) + 1.5)))
    boxes: dict[tuple[str, bool], list[list[tuple[float, float]]]] = defaultdict(list)
    for machine, segments in _by_machine(result.segments).items():
        y = row[machine]
        for segment, (low, high) in zip(segments, _lanes(segments, result.slots[machine])):
            lost = segment.outcome in ("cancelled", "paused", "lost")
            bottom, top = y - 0.4 + 0.8 * low, y - 0.4 + 0.8 * high
            boxes[(key(segment), lost)].append(
                [(segment.start, bottom), (segment.start, top), (segment.end, top), (segment.end, bottom)]
            )
            if label:
                ax.text(
                    (segment.start + segment.end) / 2,
                    (bottom + top) / 2,
                    segment.job,
                    ha="center",
                    va="center",
                    fontsize=8,
                )
    for (name, lost), polygons in boxes.items():
        ax.add_collection(
            PolyCollection(
                polygons,
                facecolors=color[name],
                edgecolors="black" if label else "none",
                linewidths=0.5,
                hatch="///" if lost else None,
                alpha=0.45 if lost else 0.9,
            )
        )
    for machine, spans in result.offline.items():
        for a, b in spans:
            ax.broken_barh([(a, b - a)], (row[machine] - 0.45, 0.9), facecolors="lightgrey", alpha=0.6, zorder=0)
    ends = [s.end for s in result.segments] + [b for spans in result.offline.values() for _, b in spans]
    ax.set_xlim(min((s.start for s in result.segments), default=0.0), max(ends, default=1.0) * 1.01 or 1.0)
    ax.set_yticks(range(len(machines)))
    ax.set_yticklabels([f"{m} ({result.platform_of[m]})" for m in machines], fontsize=8 if len(machines) < 40 else 5)
    ax.set_ylim(-0.6, len(machines) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    ax.set_title(title or f"{result.workload}: {result.policy}, estimates {result.estimates or '-'}")
    handles = [Patch(facecolor=color[a], label=a) for a in algorithms[:20]] if len(algorithms) <= 20 else []
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="///", label="lost work"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _by_machine(segments: list[Segment]) -> dict[str, list[Segment]]:
    out: dict[str, list[Segment]] = defaultdict(list)
    for s in sorted(segments, key=lambda s: (s.start, s.end)):
        out[s.machine].append(s)
    return out


def _lanes(segments: list[Segment], slots: int) -> list[tuple[float, float]]:
    """Vertical extent (fractions of the row) of each segment: the lowest band of slots free for its whole run."""
    if slots == 1:
        return [(0.0, 1.0)] * len(segments)
    active: list[tuple[float, int, int]] = []  # (end, first slot, slot count)
    out = []
    for s in segments:
        active = [a for a in active if a[0] > s.start]
        need = max(1, round(s.share * slots))
        offset = 0
        for _, first, count in sorted(active, key=lambda a: a[1]):
            if first - offset >= need:
                break
            offset = max(offset, first + count)
        if offset + need > slots:
            offset = 0
        active.append((s.end, offset, need))
        out.append((offset / slots, (offset + need) / slots))
    return out
