"""Reading helpers shared by the text-file extractors: open plain or gzip input, fill buffers, map errors."""

from __future__ import annotations

import gzip
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from io import FileIO
from pathlib import Path

from features.base import FeatureError

GZIP_MAGIC = b"\x1f\x8b"
_TEXT = bytes([9, 10, 13, *range(32, 127)])
# fraction of non-text bytes in a prefix above which input is binary
_MAX_NON_PRINTABLE = 0.1
# an input as read: the gzip stream over the file, or the file itself
Stream = gzip.GzipFile | FileIO
# glibc's default mmap threshold: smaller buffers come from the heap (see read_buffer)
SMALL_INPUT = 1 << 17


class BadInput(Exception):
    """A problem with the input; :func:`feature_errors` re-raises it as a FeatureError naming the file."""


class Deadline:
    """A scan's time budget (None: none): :meth:`check` between chunks refuses the input once it is spent, so a huge or
    highly compressed input (a gzip bomb) costs at most the budget."""

    def __init__(self, budget_s: float | None) -> None:
        self.budget_s = budget_s
        self.ends = None if budget_s is None else time.monotonic() + budget_s

    def check(self) -> None:
        if self.ends is not None and time.monotonic() > self.ends:
            raise BadInput(f"feature extraction exceeded its time budget of {self.budget_s} s")


def read_buffer(size: int, compressed: bool, most: int) -> bytearray:
    """A buffer for reading an input in chunks of at most ``most`` bytes: just large enough for a small plain input.

    A job submission's inputs are often a few kB, and allocating (and zeroing) a full chunk for each cost
    more than reading them. Only inputs under ``SMALL_INPUT`` get an exact buffer: glibc serves those from
    its heap, while a buffer of a larger exact size would be mapped and faulted in afresh on every call
    (a full chunk, once freed, raises glibc's mapping threshold and is then reused). A gzip input's size
    says nothing of its text, so it always gets ``most``.
    """
    # the whole file and one byte: end of input in one read
    exact = size + 1
    return bytearray(min(most, exact) if not compressed and exact <= SMALL_INPUT else most)


def fill(stream: Stream, buf: bytearray) -> int:
    """Read into ``buf`` until it is full or the stream ends; returns the bytes read."""
    view = memoryview(buf)
    n = 0
    while n < len(buf):
        got = stream.readinto(view[n:])
        if not got:
            break
        n += got
    return n


def is_binary(head: bytes) -> bool:
    """Whether a prefix of the input holds NUL bytes or too many non-text bytes to be a text format."""
    return b"\0" in head or len(head.translate(None, _TEXT)) > _MAX_NON_PRINTABLE * len(head)


@contextmanager
def open_input(path: Path) -> Iterator[tuple[Stream, FileIO, bool]]:
    """Open ``path`` for reading: (text stream, raw file, whether gzip), decompressing by magic bytes."""
    if path.is_dir():
        raise BadInput("is a directory, not a file")
    if not path.exists():
        raise BadInput("no such file")
    with open(path, "rb", buffering=0) as raw:
        if raw.read(2) == GZIP_MAGIC:
            raw.seek(0)
            with gzip.GzipFile(fileobj=raw, mode="rb") as stream:
                yield stream, raw, True
        else:
            raw.seek(0)
            yield raw, raw, False


@contextmanager
def feature_errors(path: Path) -> Iterator[None]:
    """Re-raise input problems, gzip corruption and read errors as :class:`FeatureError` naming ``path``."""
    try:
        yield
    except BadInput as exc:
        raise FeatureError(path, str(exc)) from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise FeatureError(path, f"corrupt or truncated gzip data: {exc}") from exc
    except OSError as exc:
        raise FeatureError(path, f"cannot read: {exc.strerror or exc}") from exc
