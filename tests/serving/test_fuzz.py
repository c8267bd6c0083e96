"""Property-based fuzz of the OpenAPI document against the live app on 127.0.0.1: no input may earn a 5xx.

Schemathesis generates requests for every operation from the schema: its examples, valid data and
invalid data. Every answer must be no server error and conform to the documented statuses, content
types and response schemas. Bounded in examples so the suite stays quick. (Schemathesis' own pytest
loader does not run on pytest 9, so the strategies are driven with Hypothesis directly.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from serving import create_app
from tests.livesrv import serve_app
from tests.serving.conftest import TOKEN, Home

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = {GenerationMode.POSITIVE: 40, GenerationMode.NEGATIVE: 25}


@pytest.fixture(scope="module")
def fuzzed(trained: Home, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The trained champions behind an app with a store of its own, so fuzzed observations touch no other test."""
    store = Path(tmp_path_factory.mktemp("fuzz")) / "store.db"
    with serve_app(create_app(trained.settings.model_copy(update={"store_url": f"sqlite:///{store}"}))) as url:
        yield url


@pytest.mark.parametrize("mode", list(EXAMPLES), ids=str)
def test_no_input_earns_a_server_error(fuzzed, mode):
    """Every operation the live document lists (new routes included); invalid data only where there is input to spoil."""
    schema = schemathesis.openapi.from_url(f"{fuzzed}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 11
    for operation in operations:
        examples = schema.get_strategies_from_examples(operation) if mode is GenerationMode.POSITIVE else []
        if mode is GenerationMode.NEGATIVE and not (operation.body or operation.query or operation.path_parameters):
            continue

        @given(st.one_of(operation.as_strategy(generation_mode=mode), *examples))
        @settings(max_examples=EXAMPLES[mode], deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case):
            case.call_and_validate(base_url=fuzzed, headers={"authorization": f"Bearer {TOKEN}"}, checks=CHECKS)

        check()
