"""Predictions from malformed FASTA inputs are refused with the problem named, never answered."""

from __future__ import annotations

import httpx
import pytest

from tests.trained import Home


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("header-only.fa", b">query 1\n", "the last record has a header but no sequence"),
        ("cut.fa", b">s1\nACDEFGHIKL\n>s2\nACDEF", "cut mid-record"),
    ],
)
def test_a_fasta_without_sequence_or_cut_short_is_422(
    base: str, trained: Home, name: str, content: bytes, problem: str
):
    (trained.inputs / name).write_bytes(content)
    response = httpx.post(f"{base}/v1/predict", json={"algorithm": "mafft", "params": {"input": name}}, timeout=60)
    assert response.status_code == 422, response.text
    assert problem in response.json()["detail"]
