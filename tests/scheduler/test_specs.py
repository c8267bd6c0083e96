"""``scheduler.specs``: one grammar for specs, a policy's spec into its registered policy with typed options, errors
naming the part."""

from __future__ import annotations

import pytest

from scheduler.policies.edf import EDFDeferral
from scheduler.specs import SpecError, parse_policy, split_specs


def test_a_policy_spec_becomes_its_registered_policy_with_typed_options() -> None:
    choice = parse_policy(" edf : objective=makespan, deferral=false, rebalance_gain=0.5, max_victims=3 ")
    assert choice.name == "edf"
    assert choice.options == {"objective": "makespan", "deferral": False, "rebalance_gain": 0.5, "max_victims": 3}
    policy = choice.build()
    assert isinstance(policy, EDFDeferral) and policy.name == "edf-nodefer" and policy.max_victims == 3
    assert choice.build() is not policy  # a fresh policy per run
    gains = parse_policy("greedy2:warm_gain=blastn@type6:0.21;blastp@type2:0.125").options["warm_gain"]
    assert gains == {("blastn", "type6"): 0.21, ("blastp", "type2"): 0.125}  # the NAME ends at the first colon


@pytest.mark.parametrize("word", ["on", "off", "yes", "no", "1", "0"])
def test_only_true_and_false_are_flags(word: str) -> None:
    with pytest.raises(SpecError, match=f"policy 'edf': option 'deferral' expects true or false, got '{word}'"):
        parse_policy(f"edf:deferral={word}")
    assert parse_policy("edf:deferral=FALSE").options == {"deferral": False}


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (parse_policy, "lottery", "unknown policy 'lottery'; known: affinity, batch-search, conservative, easy, edf, "),
        (
            parse_policy,
            "edf:objective=bogus",
            "policy 'edf': option 'objective' expects one of makespan, flowtime, got 'bogus'",
        ),
        (
            parse_policy,
            "edf:threshold=2",
            "policy 'edf' has no option 'threshold'; its options: objective, rank, deferral, power",
        ),
        (parse_policy, "edf:objective", "policy 'edf' takes no bare value ('objective'); give KEY=VALUE"),
        (parse_policy, "edf:power=true,power", "policy 'edf': option 'power' is not KEY=VALUE"),
        (parse_policy, "edf:power=true,power=false", "policy 'edf': option 'power' is given twice"),
        (parse_policy, "ga:window=1.5", "policy 'ga': option 'window' expects a whole number, got '1.5'"),
        (parse_policy, "mct:depth=2", "policy 'mct' has no option 'depth'; it takes no options"),
        (parse_policy, "greedy2:warm_gain=blastn@type6:1.5", "the gain must be in [0, 1)"),
        (parse_policy, ":x=1", "policy spec ':x=1' has no name"),
    ],
)
def test_errors_name_the_part_at_fault(parse, text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse(text)
    assert message in str(caught.value)


def test_a_list_of_specs_keeps_each_spec_s_options_together() -> None:
    assert split_specs("edf:objective=makespan,deferral=false, fcfs,noisy:0.5,") == [
        "edf:objective=makespan,deferral=false",
        "fcfs",
        "noisy:0.5",
    ]
