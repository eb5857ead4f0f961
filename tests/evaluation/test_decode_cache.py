"""The comparison's kept decodes: an interrupted comparison resumes, decodes nothing twice (early-stopped
probes and the methods' scores included) and ends as an uninterrupted one; a rerun reads everything back;
other inputs are decoded anew (fake decoder, no model)."""

import pytest
import torch
from fake_comparison import fake_ceiling, fake_run_settings, fake_scores, toy_head

import autojudge.evaluation.comparison_decode as comparison_decode
from autojudge.evaluation.comparison_decode import compare_methods
from autojudge.evaluation.decode_cache import MADE_BY, DecodeCache, tree_digest
from autojudge.evaluation.early_stop import Tally
from autojudge.evaluation.figures import ProblemFigures
from autojudge.evaluation.scoring import EvalSummary
from autojudge.evaluation.setting import Setting


@pytest.fixture
def decoder(monkeypatch):
    """The fake decoder, recording each call's (split, setting) pairs and counting the methods' scorings;
    raises at call ``stop_at``."""
    state = {"calls": [], "stop_at": None, "scorings": 0}

    def counted(params, settings, split, *args, **kwargs):
        if len(state["calls"]) == state["stop_at"]:
            raise KeyboardInterrupt
        state["calls"].append({(split, s.name) for s in settings})
        return fake_run_settings(params, settings, split, *args, **kwargs)

    monkeypatch.setattr(comparison_decode, "run_settings", counted)

    def scored(params, heads):
        state["scorings"] += 1
        return fake_scores(params, heads)

    monkeypatch.setattr(comparison_decode, "method_scores", scored)
    fake_ceiling(monkeypatch, comparison_decode)
    return state


def _decoded(state) -> set:
    return set().union(*state["calls"])


def test_an_interrupted_comparison_resumes_where_it_stopped(params, tmp_path, decoder):
    compare = params.compare.model_copy(update={"bootstrap_samples": 200, "seed": 3, "splits": ["test"]})
    settings = params.model_copy(update={"compare": compare})
    head = toy_head().save(tmp_path / "heads" / "head.safetensors")
    whole, _ = compare_methods(settings, head, None)  # nothing kept: the reference
    assert len(decoder["calls"]) > 3 and whole["stopped"]  # some probes are cut by the early stop

    decoder.update(calls=[], stop_at=3)
    with pytest.raises(KeyboardInterrupt):
        compare_methods(settings, head, None, tmp_path / "kept")
    before = _decoded(decoder)
    decoder.update(calls=[], stop_at=None, scorings=0)
    resumed, _ = compare_methods(settings, head, None, tmp_path / "kept")
    assert resumed == whole
    assert before and not before & _decoded(decoder)  # nothing decoded twice, stopped probes included
    assert decoder["scorings"] == 0  # the methods' scores were kept before the first decode

    decoder["calls"] = []
    again, _ = compare_methods(settings, head, None, tmp_path / "kept")
    assert again == whole and decoder["calls"] == []  # every decode read back
    more = compare.model_copy(update={"ceiling_problems": 50})
    grown, _ = compare_methods(params.model_copy(update={"compare": more}), head, None, tmp_path / "kept")
    assert grown["ceiling"]["problems"] == 50 and decoder["calls"] == []  # the ceiling is mined apart

    toy_head(0.4).save(head)  # another head: every decode anew
    compare_methods(settings, head, None, tmp_path / "kept")
    assert _decoded(decoder) >= before


def test_kept_outcomes_stops_and_scores_come_back_exactly_and_other_inputs_empty_the_directory(tmp_path):
    setting = Setting("fsd-kl", window=8, threshold=0.123456789, rate=0.03)
    figures = [ProblemFigures("p0", True, 12, 3), ProblemFigures("p1", False, 9, 4)]
    summary = EvalSummary(setting.name, 2, 0.5, 3.0, 21, 7, 5, 0.25)
    cut = Setting("fly", window=8, threshold=0.5, rate=1.0)
    cache = DecodeCache(tmp_path, {"inputs": 1})
    cache.keep([(setting, summary, figures)], [(cut, Tally(lost=3, gained=1, decoded=7))], "validation", 100)
    other = Setting("fsd-kl", window=8, threshold=0.12345679, rate=0.03)  # the same name, another point
    kept, stopped = DecodeCache(tmp_path, {"inputs": 1}).read([other, setting, cut], "validation", 100)
    assert kept == {1: (setting, summary, figures)} and stopped == {2: Tally(lost=3, gained=1, decoded=7)}
    assert DecodeCache(tmp_path, {"inputs": 1}).read([setting], "test", 100) == ({}, {})  # another split
    scores = {"topk": torch.tensor([1.0, 3.0]), "fsd-kl": torch.tensor([0.1, 0.123456789])}  # not sorted
    assert DecodeCache(tmp_path, {"inputs": 1}).scores(lambda: scores) is scores
    read_back = DecodeCache(tmp_path, {"inputs": 1}).scores(lambda: pytest.fail("scores computed twice"))
    assert list(read_back) == list(scores) and all(torch.equal(read_back[m], scores[m]) for m in scores)
    assert DecodeCache(tmp_path, {"inputs": 2}).read([setting, cut], "validation", 100) == ({}, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == [MADE_BY]


def test_a_tree_digest_reads_names_relative_to_their_root(tmp_path):
    for root in ("a", "b"):
        (tmp_path / root / "sub").mkdir(parents=True)
        (tmp_path / root / "sub" / "x.py").write_text("x = 1\n")
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")
    (tmp_path / "b" / "sub" / "x.py").write_text("x = 2\n")
    assert tree_digest(tmp_path / "a") != tree_digest(tmp_path / "b")
    assert tree_digest(tmp_path / "missing") == tree_digest()
