"""Acceptance rules by name: the one registry of rule names, keys and their ranges.

``rules.config`` holds what a user writes (``RuleConfig``: a rule name and its keys, validated; no
torch, so vLLM's frontend may import it), ``rules.build`` turns a config into the decision object
the reference engines and the vLLM plugin verify with (``rules.acceptance``: exact, top-k, judge;
``rules.training_free`` and ``rules.fly``: the rules on the two distributions). The
command line, the stages, the reference engines and the plugin all build rules through here, so a
rule found in the comparison is served under the same name and keys.

May import: ``rules.config`` only ``autojudge.errors`` (it is the low layer params import); the rest also
``autojudge.heads`` (the judge rule) and lower layers.
"""
