"""Every rule family has a tests/rules/FAMILY.egg of positive (check) and negative (fail (check))
cases; this runs each against rules/kernel.egg + rules/FAMILY.egg."""

from pathlib import Path

import pytest

from kalg.eqsat import engine
from kalg.resources import rules_dir

TESTS = Path(__file__).resolve().parents[1] / "rules"
FAMILIES = sorted(p.stem for p in rules_dir().glob("*.egg") if p.name != engine.HEADER)


def test_every_family_has_a_test_file():
    assert FAMILIES, "no rule families found"
    missing = [f for f in FAMILIES if not (TESTS / f"{f}.egg").is_file()]
    assert not missing, f"rule families without tests/rules/*.egg: {missing}"


@pytest.mark.parametrize("family", FAMILIES)
def test_rule_file_loads(family):
    engine.check_rules((family,))


@pytest.mark.parametrize("family", FAMILIES)
def test_rule_family_checks(family):
    text = engine.load_rules((family,)) + "\n" + (TESTS / f"{family}.egg").read_text()
    engine.run_program(text)  # a failing (check) or a passing (fail (check)) raises


def test_a_broken_rule_file_names_itself(tmp_path, monkeypatch):
    (tmp_path / "kernel.egg").write_text((rules_dir() / "kernel.egg").read_text())
    broken = "(ruleset broken)\n(rewrite (Lit a) (Nope a) :ruleset broken)\n"
    (tmp_path / "broken.egg").write_text(broken)
    monkeypatch.setattr(engine, "rules_dir", lambda: tmp_path)
    with pytest.raises(engine.RuleLoadError, match=r"broken\.egg"):
        engine.check_rules(("broken",))
