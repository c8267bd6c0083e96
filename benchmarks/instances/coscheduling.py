"""Phan, Ranganathan & Sion 2005's synthetic experiments (section 5.1, Table 2): a CMS-like batch of jobs over Zipf-popular objects.

Table 2: 50 objects of 50-1500 MB (uniform), 20 remote stores, remote -> local store
bandwidth 700-1300 kbps, local store -> node 7000-13000 kbps, objects chosen by a Zipf
law; a job computes k x (GB it downloads) seconds with k = 300, the same on every node.
The paper leaves three things open, filled here and named in :class:`Setup`: how many
objects a job needs (``per_job``, uniform 1-5), the Zipf exponent (1, the classic law of
its reference [1]) and the bandwidth of a remote store straight to a node, used when an
object is not replicated (``remote_to_node_kbps``: the wide-area range again, since the
wide-area hop is the bottleneck).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scheduler.genetic.model import Problem

MB = 2**20  # bytes
KBPS = 1000 / 8  # bytes per second of one kilobit per second


@dataclass(frozen=True)
class Setup:
    """One experiment's parameters (Table 2; ``nodes``/``stores`` 20 as in Fig 7, 5 as in Fig 8)."""

    jobs: int = 100
    nodes: int = 20
    stores: int = 20
    remotes: int = 20
    objects: int = 50
    per_job: tuple[int, int] = (1, 5)
    zipf: float = 1.0
    size_mb: tuple[float, float] = (50.0, 1500.0)
    remote_to_store_kbps: tuple[float, float] = (700.0, 1300.0)
    store_to_node_kbps: tuple[float, float] = (7000.0, 13000.0)
    remote_to_node_kbps: tuple[float, float] = (700.0, 1300.0)
    k: float = 300.0  # computation coefficient: seconds per GB downloaded (section 5.1, Fig 10)

    def __post_init__(self) -> None:
        if min(self.jobs, self.nodes, self.stores, self.remotes, self.objects) < 1:
            raise ValueError("jobs, nodes, stores, remotes and objects must be >= 1")
        low, high = self.per_job
        if not 0 <= low <= high <= self.objects:
            raise ValueError(f"per_job must be 0 <= low <= high <= objects, got {self.per_job}")


def generate(setup: Setup, seed: int) -> Problem:
    """A random instance of ``setup`` (the paper's "initialisation set"), reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    size = rng.uniform(*setup.size_mb, setup.objects) * MB
    popularity = 1.0 / np.arange(1, setup.objects + 1) ** setup.zipf
    popularity = rng.permutation(popularity / popularity.sum())  # which object is popular is random too
    requires = np.zeros((setup.jobs, setup.objects), dtype=bool)
    counts = rng.integers(setup.per_job[0], setup.per_job[1] + 1, setup.jobs)
    for j, count in enumerate(counts):
        requires[j, rng.choice(setup.objects, size=count, replace=False, p=popularity)] = True
    gigabytes = requires @ size / 2**30
    compute = np.repeat((setup.k * gigabytes)[:, None], setup.nodes, axis=1)
    return Problem(
        compute=compute,
        requires=requires,
        size=size,
        source=rng.integers(0, setup.remotes, setup.objects),
        remote_to_store=rng.uniform(*setup.remote_to_store_kbps, (setup.remotes, setup.stores)) * KBPS,
        store_to_node=rng.uniform(*setup.store_to_node_kbps, (setup.stores, setup.nodes)) * KBPS,
        remote_to_node=rng.uniform(*setup.remote_to_node_kbps, (setup.remotes, setup.nodes)) * KBPS,
    )
