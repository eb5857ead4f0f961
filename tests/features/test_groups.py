import pytest
import torch

from autojudge.errors import InputError
from autojudge.features.groups import FeatureInputs, feature_rows, rule_scores, token_class_table
from autojudge.features.spec import GROUPS, TOKEN_CLASSES, FeatureSpec


class _Tokenizer:
    texts = ("7", " ", ",", "cat", " 42", "+")

    def __len__(self) -> int:
        return len(self.texts)

    def batch_decode(self, ids: list[list[int]]) -> list[str]:
        return [self.texts[i] for (i,) in ids]


def test_rule_scores_are_the_free_rules_quantities():
    logits = torch.tensor([[2.0, 1.0, 0.0, float("-inf")], [0.0, 0.0, 0.0, 0.0]])
    scores = rule_scores(logits, torch.tensor([1, 3]))
    log_probs = logits.log_softmax(-1)
    assert scores[0, 0] == pytest.approx(float(log_probs[0, 1]))  # log p(draft)
    assert scores[0, 1] == pytest.approx(float(log_probs[0, 0]))  # log p(top-1)
    assert scores[0, 2] == pytest.approx(1.0)  # the gap: logit 2 against 1
    assert scores[0, 4] == pytest.approx(torch.tensor(2.0).log().item())  # one token above: log(1 + 1)
    assert scores[1, 3] == pytest.approx(torch.tensor(4.0).log().item())  # uniform entropy
    assert scores[1, 4] == 0  # ties share the top rank
    assert torch.isfinite(scores).all()  # a token the target cannot emit scores the floor, never -inf


def test_token_classes_of_a_tokenizers_texts():
    table = token_class_table(_Tokenizer())
    assert [TOKEN_CLASSES[c] for c in table.tolist()] == [
        "digit",
        "space",
        "punctuation",
        "word",
        "digit",
        "punctuation",
    ]


def test_feature_rows_concatenate_the_groups_in_the_specs_order():
    spec = FeatureSpec("target", 3, 2, ("token_state", "context_state", "rule_scores", "token_classes"))
    logits = torch.randn(2, 6)
    inputs = FeatureInputs(
        torch.tensor([3, 0]),
        torch.ones(2, 3),
        None,
        torch.full((2, 3), 2.0),
        logits,
        target_tokens=torch.tensor([0, 2]),
    )
    rows = feature_rows(spec, inputs, token_class_table(_Tokenizer()))
    assert rows.shape == (2, spec.dimension) == (2, 3 + 3 + 5 + 8)
    assert rows[:, :3].eq(1).all() and rows[:, 3:6].eq(2).all()
    assert torch.allclose(rows[:, 6:11], rule_scores(logits, torch.tensor([3, 0])))
    word, digit, punctuation = (TOKEN_CLASSES.index(c) for c in ("word", "digit", "punctuation"))
    assert rows[0, 11 + word] == 1 and rows[0, 15 + digit] == 1  # draft "cat", target "7"
    assert rows[1, 11 + digit] == 1 and rows[1, 15 + punctuation] == 1
    # precomputed rule scores (the features stage) give the same rows as the logits (the engines)
    precomputed = FeatureInputs(
        **{**inputs.__dict__, "target_logits": None, "rule_scores": rule_scores(logits, torch.tensor([3, 0]))}
    )
    assert torch.equal(feature_rows(spec, precomputed, token_class_table(_Tokenizer())), rows)


def test_a_group_without_its_inputs_is_refused():
    spec = FeatureSpec("target", 3, 2, ("context_state",))
    with pytest.raises(InputError, match="predicted the draft slot"):
        feature_rows(spec, FeatureInputs(torch.tensor([1]), torch.ones(1, 3)), None)


def test_spec_columns_and_narrowing():
    spec = FeatureSpec("both", 3, 2, GROUPS)
    assert spec.dimension == 5 + 3 + 5 + 8
    assert spec.columns(("rule_scores",)) == [8, 9, 10, 11, 12]
    narrowed = spec.narrowed(("token_classes", "token_state"))
    assert narrowed.groups == ("token_state", "token_classes") and narrowed.reads == ("target", "draft")
    assert FeatureSpec("draft", 3, 2, ("rule_scores",)).reads == ()
    assert FeatureSpec("draft", 3, 2, ("context_state",)).reads == ("target",)
    assert FeatureSpec("target", 3, 2, ["token_state"]) == FeatureSpec("target", 3, 2)  # JSON's lists
    with pytest.raises(InputError, match="each must be one of"):
        FeatureSpec("target", 3, 2, ("logits",))
    with pytest.raises(InputError, match="not among the computed"):
        FeatureSpec("target", 3, 2).columns(("rule_scores",))
