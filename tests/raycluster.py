"""A real local Ray cluster for tests (training.raylocal), required in CI where `make test` installs the extra."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from tests.required import required


def ray_available() -> bool:
    """Whether the optional extra is installed (the `ray` package and its command)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    from training.raylocal import RAY

    return RAY.exists()


@contextlib.contextmanager
def ray_cluster(workers: int = 1) -> Iterator[str]:
    """A head and ``workers`` worker nodes of one CPU each on 127.0.0.1; yields the address, stops every node after."""
    required(ray_available(), "Ray is not installed (the optional extra .[ray])", "`make test` installs .[ray]")
    from training.raylocal import local_cluster

    with local_cluster(workers=workers) as (address, _):
        yield address
