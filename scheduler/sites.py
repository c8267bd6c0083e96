"""Santos-Neto et al. 2004's sites as the scheduler sees them (section 2): which machines form each site, the
files each site's data server holds, and the home link's bandwidth.

A workload that provides the capability :data:`SITES` carries a :class:`Grid`; the simulator
(``simulator/grid.py``) moves the files and keeps a :class:`DataStores` in ``State.sites``, which data-aware
policies read: data location and file sizes, which the paper counts as easy to know.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

# the workload capability (Workload.provides) that data-aware policies need
SITES = "sites"
# bytes per second of one megabit per second
MBPS = 1e6 / 8
# bytes in a megabyte (the paper's file sizes)
MB = 2**20

Files = tuple[tuple[str, int], ...]  # (file name, bytes)


@dataclass(frozen=True)
class Grid:
    """Which machines form each site, the home link's bandwidth (bytes/s), and files already at each data server."""

    sites: dict[str, tuple[str, ...]]
    bandwidth: float
    stored: dict[str, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.bandwidth <= 0:
            raise ValueError(f"the home link's bandwidth must be positive, got {self.bandwidth}")
        seen: dict[str, str] = {}
        for site, machines in self.sites.items():
            if not machines:
                raise ValueError(f"site {site!r} has no processors")
            for m in machines:
                if m in seen:
                    raise ValueError(f"machine {m!r} is in sites {seen[m]!r} and {site!r}")
                seen[m] = site
        unknown = set(self.stored) - set(self.sites)
        if unknown:
            raise ValueError(f"files stored at unknown sites: {', '.join(sorted(unknown))}")

    def site_of(self) -> dict[str, str]:
        """Machine -> its site."""
        return {m: site for site, machines in self.sites.items() for m in machines}


class DataStores:
    """What the scheduler sees (``State.sites``): each site's machines, its data server's files, and the home link.

    ``transfers`` is the number of transfers on the link now, the one dynamic fact a
    knowledge-based policy (XSufferage) reads to estimate its available bandwidth.
    """

    def __init__(self, grid: Grid) -> None:
        self.sites = grid.sites
        self.site_of = grid.site_of()
        self.bandwidth = grid.bandwidth
        self.files: dict[str, dict[str, int]] = {site: dict(grid.stored.get(site, {})) for site in grid.sites}
        self.holders: dict[str, set[str]] = {}
        for site, files in self.files.items():
            for name in files:
                self.holders.setdefault(name, set()).add(site)
        self.transfers = 0

    def store(self, site: str, files: Iterable[tuple[str, int]]) -> None:
        """The site's data server now holds ``files``."""
        held = self.files[site]
        for name, size in files:
            held[name] = size
            self.holders.setdefault(name, set()).add(site)

    def affinities(self, inputs: Files) -> dict[str, int]:
        """Storage affinity of a task's input to every site where it is positive: bytes already there (Santos-Neto et al. 2004, 3.3)."""
        out: dict[str, int] = {}
        for name, size in inputs:
            for site in self.holders.get(name, ()):
                out[site] = out.get(site, 0) + size
        return out

    def missing(self, inputs: Files, site: str) -> Files:
        """The files of ``inputs`` that the site's data server lacks."""
        held = self.files[site]
        return tuple((name, size) for name, size in inputs if name not in held)
