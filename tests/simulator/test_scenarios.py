"""``simulator.scenarios``: estimate, workload and cluster specs in the grammar of ``scheduler.specs``, typed values,
errors naming the part."""

from __future__ import annotations

from pathlib import Path

import pytest

from predictor.catalog import load_catalog
from predictor.settings import BUNDLED_DATA
from scheduler.specs import SpecError
from simulator.estimates import Blind, Fitted, Noisy, Requested, Service, Truth
from simulator.scenarios import parse_cluster, parse_estimates, parse_workload


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(BUNDLED_DATA / "catalog.yaml")


def test_estimate_specs_become_sources() -> None:
    assert (
        parse_estimates("oracle") == Truth()
        and parse_estimates("none") == Blind()
        and parse_estimates("requested") == Requested()
    )
    assert parse_estimates("noisy") == Noisy(0.5) and parse_estimates("noisy:0.25") == Noisy(
        0.25
    )  # a bare value: sigma
    assert parse_estimates("model") == Fitted() and parse_estimates("model:lightgbm_log") == Fitted("lightgbm_log")
    service = parse_estimates("service:plan=q0.75")
    assert isinstance(service, Service) and service.options is not None and service.options.plan == "q0.75"
    with pytest.raises(ValueError, match="plan is point, limit or qLEVEL"):
        parse_estimates("service:plan=q2")
    oracle = object()
    assert parse_estimates("champions", champions=lambda: oracle).oracle(None) is oracle


def test_workload_and_cluster_specs(catalog, tmp_path: Path) -> None:
    recipe = parse_workload("ncbi:hours=0.02,per_type=1", catalog)
    assert recipe.options == {"hours": 0.02, "per_type": 1}
    assert [recipe.make(seed).name for seed in (0, 1)] == ["ncbi-0.02h-s0", "ncbi-0.02h-s1"]
    assert parse_workload("ncbi:hours=0.02,seed=3", catalog).make(0).name == "ncbi-0.02h-s3"  # its own seed fixes it
    assert parse_workload("fig11", catalog).make(5).name == "fig11"
    assert parse_cluster("catalog:3", catalog).describe().startswith("3 x ")  # a bare value: per_platform
    assert parse_cluster("ncbi-homo:per_type=2", catalog).describe() == "2 x type6"
    yaml_file = tmp_path / "two.yaml"
    yaml_file.write_text("machines: {type2: 2}\nplatforms: {type2: {power_watts: 10}}\n")
    assert parse_cluster(str(yaml_file), catalog).describe() == "2 x type2"


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (parse_estimates, "noisy:abc", "estimates 'noisy': option 'sigma' expects a number, got 'abc'"),
        (parse_estimates, "psychic", "unknown estimates 'psychic'; known: champions, last_two_mean, model, noisy"),
        (
            parse_estimates,
            "service:fold=3",
            "estimates 'service' has no option 'fold'; its options: plan, limit_quantile",
        ),
        (parse_estimates, "champions", "estimates 'champions' needs the service's runtime oracle"),
    ],
)
def test_errors_name_the_part_at_fault(parse, text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse(text)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nosuch", "unknown workload 'nosuch'; known: fig11, "),
        ("ncbi:bogus=2", "workload 'ncbi' has no option 'bogus'; its options: hours, seed, per_type"),
        ("ncbi:hours=soon", "workload 'ncbi': option 'hours' expects a number, got 'soon'"),
        ("bot:granularity=15,app=7", None),  # text is text: app='7' is refused by the generator itself, later
        ("fig11:jobs=3", "workload 'fig11' has no option 'jobs'; it takes no options"),
        ("/nowhere/log.swf", "no such file: /nowhere/log.swf"),
    ],
)
def test_workload_errors(catalog, text: str, message: str | None) -> None:
    if message is None:
        assert parse_workload(text, catalog).options == {"granularity": 15.0, "app": "7"}
        return
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_workload(text, catalog)


def test_cluster_errors(catalog) -> None:
    with pytest.raises(SpecError, match="unknown cluster 'moon'"):
        parse_cluster("moon", catalog)
    with pytest.raises(SpecError, match="cluster 'catalog': option 'per_platform' expects a whole number, got 'x'"):
        parse_cluster("catalog:x", catalog)
