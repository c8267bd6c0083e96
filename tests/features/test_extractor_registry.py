"""The entry-point registry finds the built-in extractors by name."""

from __future__ import annotations

import pytest

from features import CostClass, Extractor, available_extractors, get_extractor
from features.fasta import FastaExtractor
from features.params import ParamsExtractor


def test_builtins_are_registered():
    assert {"fasta", "params"} <= set(available_extractors())


def test_get_extractor_builds_with_options():
    fasta = get_extractor("fasta", mode="sampled", sample_blocks=8)
    assert isinstance(fasta, FastaExtractor) and isinstance(fasta, Extractor)
    assert fasta.cost is CostClass.SAMPLED and fasta.sample_blocks == 8
    params = get_extractor("params", schema={"n": {"type": "int", "default": 1}})
    assert isinstance(params, ParamsExtractor) and isinstance(params, Extractor)
    assert params.extract({}) == {"n": 1.0}


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(KeyError, match="fasta"):
        get_extractor("hmm-profile")
