"""Addresses shown by scheme, host and port only (issue 42): a password or a token in a registry's or a store's URL
never reaches a status page, an error line or a log."""

from __future__ import annotations

import logging

import pytest

from predictor.addresses import RedactingFormatter, redact_addresses, shown_address


@pytest.mark.parametrize(
    ("address", "shown"),
    [
        ("http://127.0.0.1:18799/?token=s3cret", "http://127.0.0.1:18799"),
        ("https://user:pa@ss@mlflow.site/api/2.0?x=1#frag", "https://mlflow.site"),
        (
            "postgresql+psycopg://predictor:s3cret@dbhost:5433/mlflow?sslmode=require",
            "postgresql+psycopg://dbhost:5433",
        ),
        ("http://[::1]:8080/x", "http://[::1]:8080"),
        ("sqlite:////srv/predictor/store.db?mode=ro", "sqlite:////srv/predictor/store.db"),
        ("postgresql+psycopg://user:pw@/predictor?host=/run/postgresql", "postgresql+psycopg:///predictor"),
        ("http://host:notaport/x", "http://host"),
    ],
)
def test_an_address_is_shown_by_its_scheme_host_and_port_only(address: str, shown: str) -> None:
    assert shown_address(address) == shown


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            "model registry http://user:pw@127.0.0.1:18799/?token=s3cret unavailable: API request to "
            "http://user:pw@127.0.0.1:18799/?token=s3cret/api/2.0/mlflow/registered-models/alias failed with exception "
            "HTTPConnectionPool(host='127.0.0.1', port=18799): Max retries exceeded with url: "
            "/?token=s3cret/api/2.0/mlflow/registered-models/alias&name=runtime-mafft-cpu1&alias=champion (Caused by x)",
            "model registry http://127.0.0.1:18799 unavailable: API request to http://127.0.0.1:18799 failed with "
            "exception HTTPConnectionPool(host='127.0.0.1', port=18799): Max retries exceeded with url: / (Caused by x)",
        ),
        (
            "see postgresql+psycopg://a:b@db/m and https://u:p@ss@h/x?to=a@b, then http://user@host.",
            "see postgresql+psycopg://db and https://h, then http://host.",
        ),
        (
            '{"event": "failed", "error": "at http://h:1/p?token=s3cret"}',
            '{"event": "failed", "error": "at http://h:1"}',
        ),
        ("nothing to hide: GET /v1/orders?after=3", "nothing to hide: GET /v1/orders?after=3"),
    ],
)
def test_every_address_in_a_text_is_redacted(text: str, redacted: str) -> None:
    assert redact_addresses(text) == redacted


def test_a_log_line_and_its_traceback_show_no_token() -> None:
    try:
        raise RuntimeError("API request to http://h:5000/?token=s3cret failed")
    except RuntimeError:
        record = logging.LogRecord(
            "worker", logging.ERROR, __file__, 1, "pass failed at %s", ("http://u:pw@h:5000",), None
        )
        import sys

        record.exc_info = sys.exc_info()
    line = RedactingFormatter("%(levelname)s %(message)s").format(record)
    assert line.startswith("ERROR pass failed at http://h:5000\n") and "s3cret" not in line and "pw" not in line
    assert "RuntimeError: API request to http://h:5000 failed" in line
