"""The checks across sections (``params.checks``) and the one-line messages (``params.messages``): the project's
params.yaml with one dotted override each fails to load with one line naming the key, the value and what is
allowed; every preset passes the whole check."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from helpers import set_params

from autojudge.errors import InputError
from autojudge.orchestration.presets import available_presets, merged_params
from autojudge.params import KNOWN_TASKS, load_params
from autojudge.params.checks import budget_points

REPO = Path(__file__).resolve().parents[2]
PARAMS = yaml.safe_load((REPO / "params.yaml").read_text())
ARITH = "its splits (toy.splits): " + ", ".join(PARAMS["toy"]["splits"])
PYFUNC = "its splits (toy.code_splits): " + ", ".join(PARAMS["toy"]["code_splits"])
KNOWN = "known tasks: " + ", ".join(KNOWN_TASKS)
BUDGET = "(the promotion gate reads the comparison's verdict at that budget)"
WINDOW = "(the promotion gate reads the head's figures from both stages, and the comparison's window is the one served)"
JUDGE = "must be in [0, 1], the judge rule's threshold range (a head's p(important))"

CASES = {
    "split": [
        ({"evaluate.split": "tset"}, f"evaluate.split: 'tset' is not a split of task 'arith'; {ARITH}"),
        ({"mining.split": "tset"}, f"mining.split: 'tset' is not a split of task 'arith'; {ARITH}"),
        (
            {"compare.splits": ["test", "tset"]},
            f"compare.splits: 'tset' is not a split of task 'arith'; {ARITH}",
        ),
        (
            {"compare.validation_split": "valdation"},
            f"compare.validation_split: 'valdation' is not a split of task 'arith'; {ARITH}",
        ),
        (
            {"sampled.splits": ["validaton", "test"]},
            f"sampled.splits: 'validaton' is not a split of task 'arith'; {ARITH}",
        ),
        ({"bench.split": "tset"}, f"bench.split: 'tset' is not a split of task 'arith'; {ARITH}"),
        (
            {"crossdomain.domains": ["arith:test", "pyfunc:shifted"]},
            f"crossdomain.domains: 'shifted' is not a split of task 'pyfunc'; {PYFUNC}",
        ),
        (
            {"tasks.pyfunc.compare.splits": ["shifted"]},
            f"tasks.pyfunc: compare.splits: 'shifted' is not a split of task 'pyfunc'; {PYFUNC}",
        ),
        (
            {"tasks.arith.train": {"threshold_policy": "accuracy", "calibration_split": "tset"}},
            f"tasks.arith: train.calibration_split: 'tset' is not a split of task 'arith'; {ARITH}",
        ),
        (
            {"finetune.target": {"base": "b", "adapter": "a", "out": "o", "eval_splits": ["test", "unsen"]}},
            f"finetune.target.eval_splits: 'unsen' is not a split of task 'arith'; {ARITH}",
        ),
        (
            {"toy.code_splits": {"train": 100, "test": 20}},
            "tasks.pyfunc: compare.validation_split: 'validation' is not a split of task 'pyfunc'; "
            "its splits (toy.code_splits): train, test",
        ),
    ],
    "task": [
        ({"task.name": "gsm9k"}, "task.name 'gsm9k' must be one of tasks ['arith', 'pyfunc']"),
        ({"tasks.gsm9k": {}}, f"tasks: 'gsm9k' is not a known task; {KNOWN}"),
        (
            {"crossdomain.domains": ["gsm9k:test"]},
            f"crossdomain.domains: 'gsm9k:test' names no known task; {KNOWN}",
        ),
        (
            {"crossdomain.domains": ["arith:test", "humaneval:test"]},
            "crossdomain.domains: 'humaneval:test' names no task of tasks ['arith', 'pyfunc']",
        ),
        (
            {"distill.draft": {"target": "t", "out": "o", "task": "gsm9k"}},
            f"distill.draft.task: 'gsm9k' is not a known task; {KNOWN}",
        ),
    ],
    "budget": [
        (
            {"promote.max_accuracy_drop": 0.015},
            f"promote.max_accuracy_drop: 0.015 must be one of compare.budgets [0.01, 0.02] {BUDGET}",
        ),
        (
            {"promote.max_accuracy_drop": 1.5},
            "promote.max_accuracy_drop: Input should be less than or equal to 1, got 1.5",
        ),
        (
            {"promote.max_accuracy_drop": -0.01},
            "promote.max_accuracy_drop: Input should be greater than or equal to 0, got -0.01",
        ),
        (
            {"compare.budgets": [0.02, 0.05]},
            f"promote.max_accuracy_drop: 0.01 must be one of compare.budgets [0.02, 0.05] {BUDGET}",
        ),
        (
            {"tasks.pyfunc.compare.budgets": [0.02]},
            f"tasks.pyfunc: promote.max_accuracy_drop: 0.01 must be one of compare.budgets [0.02] {BUDGET}",
        ),
        ({"compare.budgets": [0.01, 2]}, "compare.budgets.1: Input should be less than or equal to 1, got 2"),
    ],
    "window": [
        ({"compare.window": 16}, f"compare.window: 16 must equal evaluate.window 32 {WINDOW}"),
        ({"evaluate.window": 8}, f"compare.window: 32 must equal evaluate.window 8 {WINDOW}"),
        (
            {"tasks.pyfunc.evaluate.window": 16},
            f"tasks.pyfunc: compare.window: 32 must equal evaluate.window 16 {WINDOW}",
        ),
        (
            {"bench.overhead_window": 4},
            f"bench.overhead_window 4 must be one of bench.windows {PARAMS['bench']['windows']}",
        ),
        (
            {"compare.fly_window_size": 40},
            "compare.fly_window_size / compare.window: autojudge: fly_window_size must be in [1, 31] "
            "(smaller than num_speculative_tokens 32), got 40",
        ),
    ],
    "threshold": [
        ({"bench.thresholds": [1.5]}, f"bench.thresholds: 1.5 {JUDGE}"),
        ({"bench.thresholds": [-0.1, 0.5]}, f"bench.thresholds: -0.1 {JUDGE}"),
        ({"tasks.pyfunc.bench.thresholds": [2.0]}, f"tasks.pyfunc: bench.thresholds: 2 {JUDGE}"),
        (
            {"evaluate.recalls": [0.99, 1.5]},
            "evaluate.recalls.1: Input should be less than or equal to 1, got 1.5",
        ),
        ({"compare.confidence": 0}, "compare.confidence: Input should be greater than 0, got 0"),
    ],
    "proposer": [  # an EAGLE head decodes on vLLM, with target-state heads, greedily
        (
            {"pair.proposer": "eagle", "decoding.engine": "reference"},
            "decoding.engine: 'reference' cannot decode pair.proposer 'eagle' (the reference engines chain a "
            "draft model's guesses); use 'vllm'",
        ),
        (
            {"pair.proposer": "eagle", "decoding.engine": "vllm", "features.source": "both"},
            "features.source: 'both' reads draft hidden states, pair.proposer 'eagle' has none; use 'target'",
        ),
        (
            {"pair.proposer": "eagle", "decoding.engine": "vllm", "mining.gumbel_seed": 3},
            "mining.gumbel_seed: 3 samples the draft, pair.proposer 'eagle' guesses greedily; use null",
        ),
        (
            {"pair.proposer": "medusa"},
            "pair.proposer: Input should be 'draft_model' or 'eagle', got 'medusa'",
        ),
    ],
    "mined": [  # a proposer trained on the problems Algorithm 1 mines agrees with its own training responses
        (
            {"eagle.head": {"target": "t", "out": "o", "head": "h", "problems": 300}},
            "mining.skip: 0 mines problems of 'train' that eagle.head trains on (its first 300); "
            "set mining.skip >= 300",
        ),
    ],
    "location": [  # a section's own check names the section; a pipeline task's problem names the task
        ({"mining.shards": [0, 2]}, "mining: shards must be 0..n-1 without gaps, got [0, 2]"),
        (
            {"tasks.pyfunc.mining.problems": -1},
            "tasks.pyfunc: mining.problems: Input should be greater than 0, got -1",
        ),
        ({"mining.engine": "vlm"}, "mining.engine: Input should be 'vllm', 'hf' or 'openai', got 'vlm'"),
    ],
}


@pytest.mark.parametrize(
    ("override", "message"),
    [pytest.param(override, message, id=f"{kind}-{next(iter(override))}") for kind, cases in CASES.items()
     for override, message in cases],
)  # fmt: skip
def test_a_bad_params_file_fails_at_load_with_one_line(tmp_path, override, message):
    path = tmp_path / "params.yaml"
    shutil.copy(REPO / "params.yaml", path)
    set_params(path, override)
    with pytest.raises(InputError) as error:
        load_params(path)
    assert str(error.value) == f"{path}: invalid parameters: {message}"


def test_without_pipeline_tasks_task_names_are_checked_against_the_known_tasks(rejected):
    rejected(
        "task: {name: gsm9k}\n", rf"invalid parameters: task\.name: 'gsm9k' is not a known task; {KNOWN}$"
    )


def test_a_toy_task_without_a_toy_section_has_no_known_splits(tmp_path):
    """The arith and pyfunc splits come from ``toy``: without it nothing says which they are."""
    path = tmp_path / "params.yaml"
    path.write_text("evaluate: {split: anything}\nmining: {split: other}\n")
    assert load_params(path).evaluate.split == "anything"


@pytest.mark.parametrize("budget", [0.01, 0.02, 0.005, 0.1, 0.0])
def test_budgets_are_matched_as_the_comparison_keys_them(budget):
    from autojudge.evaluation.comparison import budget_key

    assert budget_points(budget) == budget_key(budget)


@pytest.mark.parametrize("preset", available_presets(REPO))
def test_every_preset_passes_the_whole_check(preset):
    merged_params(REPO, preset)
