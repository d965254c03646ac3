"""scripts/README.md indexes every script: a user finds what each is for, what it needs and how
long it takes before running it; probes (the evidence of a rule) live in scripts/probes/."""

from __future__ import annotations

import re

from builders import ROOT

SCRIPTS = ROOT / "scripts"


def _indexed() -> set[str]:
    return set(re.findall(r"`((?:probes/)?[A-Za-z0-9_]+\.py)`", (SCRIPTS / "README.md").read_text()))


def test_every_script_is_in_the_index() -> None:
    scripts = {p.relative_to(SCRIPTS).as_posix() for p in [*SCRIPTS.glob("*.py"), *SCRIPTS.glob("probes/*.py")]}
    assert scripts - _indexed() == set(), "scripts missing from scripts/README.md"
    assert _indexed() - scripts == set(), "scripts/README.md names scripts that do not exist"


def test_probes_are_in_their_folder() -> None:
    assert not list(SCRIPTS.glob("probe_*.py")), "probes go to scripts/probes/"
