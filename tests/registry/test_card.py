"""The card's comparison section: the head's point at the promotion gate's budget against the ceiling, then
every method's table (fake comparison, no model)."""

from fake_comparison import fake_ceiling, fake_evaluation, fake_run_settings, fake_scores, toy_head

import autojudge.evaluation.comparison_decode as comparison_decode
from autojudge.evaluation.comparison import budget_key
from autojudge.registry.card import build_card, card_markdown

EVALUATION = fake_evaluation()


def test_the_card_puts_the_heads_share_of_the_ceiling_before_the_comparison(params, tmp_path, monkeypatch):
    monkeypatch.setattr(comparison_decode, "run_settings", fake_run_settings)
    monkeypatch.setattr(comparison_decode, "method_scores", fake_scores)
    fake_ceiling(monkeypatch, comparison_decode)
    compare = params.compare.model_copy(update={"bootstrap_samples": 200, "splits": ["test"]})
    head = toy_head()
    comparison, _ = comparison_decode.compare_methods(
        params.model_copy(update={"compare": compare}), head.save(tmp_path / "head.safetensors"), None
    )
    card = build_card(params, head, {}, EVALUATION, "autojudge-arith-toy", comparison=comparison)
    text = card_markdown(card)
    budget = budget_key(params.promote.max_accuracy_drop)
    [point] = [
        p for p in comparison["ceiling"]["points"] if p["method"] == "judge" and budget in p["budgets"]
    ]
    sentence = f"this head's point within {budget} point(s) reaches "
    assert sentence in text and text.index(sentence) < text.index("### The ceiling") < text.index("Methods:")
    assert (
        f"accepting {100 * point['accepted']['important']:.1f}% of the important and "
        f"{100 * point['accepted']['unimportant']:.1f}% of the unimportant mismatches." in text
    )
    comparison.pop("ceiling")  # a comparison made before the ceiling: no sentence, no table
    text = card_markdown(build_card(params, head, {}, EVALUATION, "m", comparison=comparison))
    assert "## Which judge to use" in text and "ceiling" not in text
