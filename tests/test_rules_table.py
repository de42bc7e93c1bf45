"""docs/rules.md's table is the contract's one list of rules and severities: the checker's registry and
docs/fields.md's expert table (which both plugins are held to) give each rule the same severity."""

import re

from nrsack.analyzer.rules import REGISTRY
from support.paths import REPO


def severities(path, pattern):
    return dict(re.findall(pattern, (REPO / "docs" / path).read_text(), re.M))


def test_rules_md_the_checker_and_the_plugins_give_each_rule_one_severity():
    contract = severities("rules.md", r"^\| ([A-Z]{2,3}-\d\d) \| (\w+) \|")
    plugins = {f"{name[:-2]}-{name[-2:]}": severity for name, severity in
               severities("fields.md", r"^\| nrsack\.rule\.([A-Z]{2,3}\d\d) \| (\w+) \|").items()}
    checker = {rule_id: rule.severity for rule_id, rule in REGISTRY.items()}
    assert contract == checker
    assert {rule_id: contract[rule_id] for rule_id in plugins} == plugins
