import pytest

from autojudge.errors import InputError
from autojudge.heads.out_of_fold import assign_folds, out_of_fold_splits


def test_every_problem_is_evaluated_once_by_a_head_that_never_saw_it():
    ids = [f"HumanEval/{i}" for i in range(164)] * 3  # repeated ids: several mined tokens per problem
    splits = list(out_of_fold_splits(ids, folds=5, seed=0))
    assert len(splits) == 5
    evaluated = [i for _, held_out in splits for i in held_out]
    assert sorted(evaluated) == sorted(set(ids))
    for train, held_out in splits:
        assert set(train).isdisjoint(held_out) and set(train) | set(held_out) == set(ids)
        assert len(held_out) in (32, 33)


def test_folds_depend_on_the_seed_and_ids_only():
    ids = [f"p{i}" for i in range(20)]
    assert assign_folds(ids, 4, seed=1) == assign_folds(list(reversed(ids)), 4, seed=1)
    assert assign_folds(ids, 4, seed=1) != assign_folds(ids, 4, seed=2)
    with pytest.raises(InputError):
        assign_folds(ids, 1, seed=0)
    with pytest.raises(InputError):
        assign_folds(ids[:3], 4, seed=0)
