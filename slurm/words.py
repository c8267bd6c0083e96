"""The ``key=value`` words that name a job's algorithm and parameters, and the tag the plugin leaves in a job's comment.

A job says what it runs in words such as ``algorithm=mafft input=seqs.fa``: in a ``#PREDICTOR`` line of its script,
in the ``PREDICTOR_JOB`` environment variable, or after ``predictor:`` in its ``--comment``. Words are split as a
shell would (quote a value with spaces). ``algorithm`` and ``platform`` are reserved; every other key is a parameter.

The job_submit plugin appends its tag to the comment, ``predictor: algorithm=... platform=... estimate=<s>
limit=<s> model=<name> version=<v> memory=<bytes> memory_limit=<bytes> memory_model=<name> memory_version=<v>
<params>`` (the memory words where a memory champion answered), replacing a ``predictor:`` part the user wrote (whose
words it carries on); finished jobs are read back through it.
"""

from __future__ import annotations

import shlex

TAG = "predictor:"
DIRECTIVE = "#PREDICTOR"
ENVIRONMENT = "PREDICTOR_JOB"
NAMING = ("algorithm", "platform")
# what the tag says of the estimate served at submission
SERVED = (
    "estimate",
    "limit",
    "model",
    "version",
    "memory",
    "memory_limit",
    "memory_model",
    "memory_version",
)
RESERVED = (*NAMING, *SERVED)


class WordsError(ValueError):
    """Words that are not ``key=value`` pairs."""


def parse_words(text: str) -> dict[str, str]:
    """``key=value`` words as a dict (a later key wins); WordsError for a word without ``=`` or an open quote."""
    try:
        words = shlex.split(text, comments=False)
    except ValueError as exc:
        raise WordsError(f"cannot split {text!r}: {exc}") from None
    pairs: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise WordsError(f"expected key=value, got {word!r}")
        pairs[key] = value
    return pairs


def format_words(pairs: dict[str, object]) -> str:
    """Pairs as words :func:`parse_words` reads back (values quoted where needed; None left out)."""
    return " ".join(f"{key}={shlex.quote(str(value))}" for key, value in pairs.items() if value is not None)


def split_comment(comment: str) -> tuple[str, str]:
    """The user's part of a comment and the words after its ``predictor:`` tag ('' when it has none)."""
    head, sep, tail = comment.partition(TAG)
    return (head.rstrip(), tail.strip()) if sep else (comment.strip(), "")


def tagged_comment(comment: str, pairs: dict[str, object]) -> str:
    """``comment`` with its tag replaced by one holding ``pairs``."""
    user, _ = split_comment(comment)
    tag = f"{TAG} {format_words(pairs)}"
    return f"{user} {tag}" if user else tag


def directive_words(script: str) -> str:
    """The words of every ``#PREDICTOR`` line of a batch script, in order."""
    return " ".join(
        line.strip()[len(DIRECTIVE) :].strip() for line in script.splitlines() if line.strip().startswith(DIRECTIVE)
    )
