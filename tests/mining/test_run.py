"""Mining from params with an EAGLE head as the proposer: Algorithm 1 tests the head's guesses."""

from helpers import write_params

from autojudge.io import read_json
from autojudge.mining.run import mine_from_params
from autojudge.mining.shards import load_shard
from autojudge.models.runtime import pair_from, predictor_from
from autojudge.params import load_params


def test_an_eagle_pair_mines_the_heads_mismatches(repo, tmp_path, arith_dir, toy_eagle_head):
    overrides = {
        "pair.proposer": "eagle",
        "pair.draft": str(toy_eagle_head),
        "decoding.engine": "vllm",  # what an EAGLE pair decodes on (params.checks)
        "mining.engine": "hf",
        "mining.problems": 3,
        "mining.max_response_tokens": 24,
    }
    params = load_params(write_params(repo, tmp_path, arith_dir, overrides))
    summary = mine_from_params(params, 0, tmp_path / "shard")
    assert summary.problems == 3 and summary.mismatches > 0
    assert read_json(tmp_path / "shard" / "summary.json")["settings"]["proposer"] == "eagle"
    predictor = predictor_from(pair_from(params))
    for problem in load_shard(tmp_path / "shard"):
        # the first tested mismatch is the head's first disagreement with the target's own response
        guesses = predictor.predict([problem.prompt_ids], [problem.initial_response_ids])[0]
        response = problem.initial_response_ids
        first = next(i for i, (g, t) in enumerate(zip(guesses, response, strict=True)) if g != t)
        mismatch = problem.mismatches[0]
        assert (mismatch.position, mismatch.draft_token, mismatch.target_token) == (
            first,
            guesses[first],
            response[first],
        )


def test_mining_skip_passes_over_the_first_problems_and_is_recorded(
    repo, tmp_path, arith_dir, arith_task, toy_pair
):
    """mining.skip: the problems after the first ``skip`` (those a proposer trained on), in the same order, and
    the shard's fingerprint names it (a shard mined without it is not read back as its)."""
    from autojudge.mining.run import mining_problems, mining_settings

    skipping = load_params(write_params(repo, tmp_path, arith_dir, {"mining.problems": 3, "mining.skip": 5}))
    problems = mining_problems(skipping, toy_pair)
    assert [p.id for p in problems] == [e.id for e in arith_task.load_split("train", 8)[5:]]
    assert mining_settings(skipping, toy_pair)["skipped_problems"] == 5
    (tmp_path / "plain").mkdir()
    plain = load_params(write_params(repo, tmp_path / "plain", arith_dir, {"mining.problems": 3}))
    assert "skipped_problems" not in mining_settings(plain, toy_pair)


def test_the_first_problems_of_another_split_are_mined_from_its_start(repo, tmp_path, arith_dir, arith_task):
    """``mine_first`` (``autojudge ceiling``, the comparison's ceiling): another split is mined from its first
    problem, whatever mining.skip passes over in the mining split, as one shard that a rerun resumes."""
    from autojudge.mining.run import mine_first

    overrides = {"mining.engine": "hf", "mining.skip": 5, "mining.max_response_tokens": 32}
    params = load_params(write_params(repo, tmp_path, arith_dir, overrides))
    mined = mine_first(params, 2, tmp_path / "ceiling", "validation")
    assert [p.id for p in mined] == [e.id for e in arith_task.load_split("validation", 2)]
    assert read_json(tmp_path / "ceiling" / "summary.json")["settings"]["split"] == "validation"
    assert mine_first(params, 2, tmp_path / "ceiling", "validation") == mined  # read back, nothing mined anew
    assert read_json(tmp_path / "ceiling" / "summary.json")["mined_this_run"] == 0
