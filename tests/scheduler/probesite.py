"""A site whose probes are easy to reason about: a ``sleep`` algorithm whose run time is its parameter, and a probe plan
of one short and one long sleep on cpu1; plus a MAFFT input for the real work that takes a probing machine."""

from __future__ import annotations

from pathlib import Path

import httpx
import yaml

from data.datagen import write_family_fasta
from predictor.settings import Settings
from scheduler.settings import ProbeSettings
from tests.scheduler.served import seed_profile

SLEEP = {
    "parameters": {"seconds": {"type": "float", "required": True, "min": 0}},
    "implementations": {"cpu1": {"command": ["sleep", "{seconds}"]}},
}
PLAN = {
    "seed": 3,
    "repeats": 1,
    "timeout_s": 600,
    "inputs": {},
    "jobs": [{"algorithm": "sleep", "platforms": ["cpu1"], "files": {}, "grid": {"seconds": [1, 300]}}],
}


def sleep_site(root: Path) -> tuple[Settings, ProbeSettings]:
    """Settings probing with the two sleeps (coverage rule, an hour's budget, a 600 s cap), the profile table seeded."""
    (site := root / "site.yaml").write_text(yaml.safe_dump({"algorithms": {"sleep": SLEEP}}))
    (plan := root / "plan.yaml").write_text(yaml.safe_dump(PLAN))
    inputs = root / "inputs"
    inputs.mkdir()
    write_family_fasta(inputs / "f.fa", n_sequences=8, length=120, mutation_rate=0.2, alphabet="protein", seed=1)
    settings = Settings(home=root / "home", data_roots=[inputs], site_catalogs=[site])
    seed_profile(settings)
    return settings, ProbeSettings(plan=plan, rule="coverage", budget_s=3600, cap_s=600)


def orders(base: str, kind: str) -> list[dict]:
    """The issued orders of one kind, oldest first."""
    return [o for o in httpx.get(f"{base}/v1/orders", timeout=10).json()["orders"] if o["kind"] == kind]


def probe_of(base: str, seconds: float) -> dict | None:
    """The probe order of the sleep of ``seconds``, once issued."""
    return next((o for o in orders(base, "probe") if o["probe"]["params"] == {"seconds": seconds}), None)
