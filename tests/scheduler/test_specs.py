"""``scheduler.specs``: one grammar for policies, estimates, workloads and clusters, typed values, errors naming the part."""

from __future__ import annotations

from pathlib import Path

import pytest

from predictor.catalog import load_catalog
from predictor.settings import BUNDLED_DATA
from scheduler.policies.edf import EDFDeferral
from scheduler.specs import SpecError, parse_policy, split_specs
from simulator.estimates import Blind, Fitted, Noisy, Requested, Service, Truth
from simulator.scenarios import parse_cluster, parse_estimates, parse_workload


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(BUNDLED_DATA / "catalog.yaml")


def test_a_policy_spec_becomes_its_registered_policy_with_typed_options() -> None:
    choice = parse_policy(" edf : objective=makespan, deferral=false, rebalance_gain=0.5, max_victims=3 ")
    assert choice.name == "edf"
    assert choice.options == {"objective": "makespan", "deferral": False, "rebalance_gain": 0.5, "max_victims": 3}
    policy = choice.build()
    assert isinstance(policy, EDFDeferral) and policy.name == "edf-nodefer" and policy.max_victims == 3
    assert choice.build() is not policy  # a fresh policy per run
    gains = parse_policy("greedy2:warm_gain=blastn@type6:0.21;blastp@type2:0.125").options["warm_gain"]
    assert gains == {("blastn", "type6"): 0.21, ("blastp", "type2"): 0.125}  # the NAME ends at the first colon


def test_estimate_specs_become_sources() -> None:
    assert parse_estimates("oracle") == Truth() and parse_estimates("none") == Blind() and parse_estimates("requested") == Requested()
    assert parse_estimates("noisy") == Noisy(0.5) and parse_estimates("noisy:0.25") == Noisy(0.25)  # a bare value: sigma
    assert parse_estimates("model") == Fitted() and parse_estimates("model:lightgbm_log") == Fitted("lightgbm_log")
    service = parse_estimates("service:models=mean+linear,folds=3")
    assert isinstance(service, Service) and service.options.models == ("mean", "linear") and service.options.folds == 3
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


@pytest.mark.parametrize("word", ["on", "off", "yes", "no", "1", "0"])
def test_only_true_and_false_are_flags(word: str) -> None:
    with pytest.raises(SpecError, match=f"policy 'edf': option 'deferral' expects true or false, got '{word}'"):
        parse_policy(f"edf:deferral={word}")
    assert parse_policy("edf:deferral=FALSE").options == {"deferral": False}


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (parse_policy, "lottery", "unknown policy 'lottery'; known: affinity, batch-search, conservative, easy, edf, "),
        (parse_policy, "edf:objective=bogus", "policy 'edf': option 'objective' expects one of makespan, flowtime, got 'bogus'"),
        (parse_policy, "edf:threshold=2", "policy 'edf' has no option 'threshold'; its options: objective, rank, deferral, power"),
        (parse_policy, "edf:objective", "policy 'edf' takes no bare value ('objective'); give KEY=VALUE"),
        (parse_policy, "edf:power=true,power", "policy 'edf': option 'power' is not KEY=VALUE"),
        (parse_policy, "edf:power=true,power=false", "policy 'edf': option 'power' is given twice"),
        (parse_policy, "ga:window=1.5", "policy 'ga': option 'window' expects a whole number, got '1.5'"),
        (parse_policy, "mct:depth=2", "policy 'mct' has no option 'depth'; it takes no options"),
        (parse_policy, "greedy2:warm_gain=blastn@type6:1.5", "the gain must be in [0, 1)"),
        (parse_policy, ":x=1", "policy spec ':x=1' has no name"),
        (parse_estimates, "noisy:abc", "estimates 'noisy': option 'sigma' expects a number, got 'abc'"),
        (parse_estimates, "psychic", "unknown estimates 'psychic'; known: champions, last_two_mean, model, noisy"),
        (parse_estimates, "service:fold=3", "estimates 'service' has no option 'fold'; its options: models, folds"),
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


def test_a_list_of_specs_keeps_each_spec_s_options_together() -> None:
    assert split_specs("edf:objective=makespan,deferral=false, fcfs,noisy:0.5,") == [
        "edf:objective=makespan,deferral=false", "fcfs", "noisy:0.5"
    ]  # fmt: skip
