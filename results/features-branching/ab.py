"""Feature extraction before and after the branched sequences (one pass per problem), on one run's mined data.

Run inside a preset's run directory (its params.yaml, models and mining/arith/mined.parquet), with the
implementation before the change written next to this script first:

    git show 8fb6205:src/autojudge/features/hidden_states.py > results/features-branching/before.py
    (cd <run directory> && python <repository>/results/features-branching/ab.py)

Both run alternately, twice each, on the same models and mismatches; prints seconds and the largest
difference between their feature matrices.
"""

import importlib.util
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from autojudge.features import hidden_states as after
from autojudge.features.spec import FeatureSpec
from autojudge.mining.dataset import COLUMNS, problems_from_rows, read_parquet
from autojudge.models.runtime import pair_from
from autojudge.params import load_params

spec_of_before = importlib.util.spec_from_file_location("before", Path(__file__).with_name("before.py"))
before = importlib.util.module_from_spec(spec_of_before)
sys.modules["before"] = before
spec_of_before.loader.exec_module(before)

params = load_params()
problems = problems_from_rows(read_parquet(Path("mining/arith/mined.parquet"), COLUMNS))
pair = pair_from(params, dtype=params.features.dtype)
spec = FeatureSpec(params.features.source, pair.target.config.hidden_size, pair.draft.config.hidden_size)
seconds: dict[str, list[float]] = {"before": [], "after": []}
matrices = {}
for _ in range(2):
    for name, module in (("before", before), ("after", after)):
        started = time.perf_counter()
        matrices[name], _ = module.extract_features(
            pair.target, pair.draft, problems, spec, pair.pad_token_id, params.features.batch_size
        )
        seconds[name].append(round(time.perf_counter() - started, 1))
for name, values in seconds.items():
    print(f"{name}: {values} s, median {statistics.median(values)} s")
print(
    f"{matrices['after'].shape[0]} mismatches; largest difference {np.abs(matrices['before'] - matrices['after']).max():.2g}"
)
