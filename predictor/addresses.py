"""Addresses as they may be shown: a store's or a registry's URL carries passwords and tokens (in its user part, its
path, its query), and status pages, error lines and logs are read without one.

A network address is shown as its scheme, host and port (``http://mlflow.site:5000``); a local one, which has no
host, as its scheme and path (``sqlite:////srv/predictor/store.db``): a file's path is its address and holds no
secret. Nothing else of an address is ever shown.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit

# A URI in free text: a scheme, ``//``, then anything up to a space, a quote, a bracket or a backslash (JSON's escape).
_URI = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>\\`]*")
# A request's target as urllib3 names it ("Max retries exceeded with url: /path?query"): its query and fragment.
_TARGET_QUERY = re.compile(r"(\burl: /[^\s?#]*)[?#][^\s\"'\\]*")


def shown_address(uri: str) -> str:
    """``uri`` as it may be shown: ``scheme://host:port``, or ``scheme://path`` for a local address without a host."""
    scheme, _, rest = uri.partition("://")
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, path = rest[:end], rest[end:]
    # a password may hold an unescaped "@": the host follows the last one
    host_port = authority.rpartition("@")[2]
    if host_port:
        return f"{scheme}://{_host_port(scheme, host_port)}"
    return f"{scheme}://{re.split(r'[?#]', path, maxsplit=1)[0]}"


def redact_addresses(text: str) -> str:
    """``text`` with every address in it shown as :func:`shown_address` shows it, and the query of a request target
    that an HTTP library names without its address removed: registry URIs reach status pages, error answers and logs
    (MLflow and urllib3 name the URL they asked in their errors)."""
    return _TARGET_QUERY.sub(r"\1", _URI.sub(_shown_in_text, text))


def _shown_in_text(match: re.Match[str]) -> str:
    """A URI found in text, shown; punctuation that ends the sentence around it stays."""
    uri = match[0].rstrip(".,;:!?)")
    return shown_address(uri) + match[0][len(uri) :]


class RedactingFormatter(logging.Formatter):
    """A log line (its traceback included) with every address in it shown as :func:`redact_addresses` shows it."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_addresses(super().format(record))


def _host_port(scheme: str, host_port: str) -> str:
    """The host and port of an authority, as parsed (an unparseable port is left out)."""
    try:
        parts = urlsplit(f"{scheme}://{host_port}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return host_port.partition(":")[0]
    if host is None:
        return ""
    host = f"[{host}]" if ":" in host else host
    return host if port is None else f"{host}:{port}"
