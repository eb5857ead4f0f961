"""Stage scripts import only what they use: those that run no model import no model stack.

Every DVC stage is a fresh process that pays its imports; torch and transformers alone take 10-15 s on
2 cores (docs/development.md). A module that only names a model type, or holds data or text that a
decoding module also uses, keeps the model stack out of its imports (``TYPE_CHECKING``, or a light module
beside the heavy one), so these stages start in seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

STAGES = Path(__file__).resolve().parents[1] / "stages"
# stages whose run needs no model (train loads the target's tokenizer, and with it transformers, only
# when it runs; register loads the head's tensors only then)
LIGHT = ("prepare", "merge", "train", "train_selfjudge", "register", "bench")
HEAVY = ("torch", "transformers", "vllm")

# a fresh interpreter imports each stage script as a module (its __main__ block does not run)
PROBE = r"""
import json, sys
stages, heavy, light = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
sys.path.insert(0, stages)
added = {}
for stage in light:
    before = {m for m in heavy if m in sys.modules}
    __import__(stage)
    added[stage] = sorted({m for m in heavy if m in sys.modules} - before)
print(json.dumps(added))
"""


def test_stages_that_run_no_model_import_no_torch_transformers_or_vllm():
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(STAGES), ",".join(HEAVY), *LIGHT],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    added = json.loads(done.stdout.strip().splitlines()[-1])
    assert added == {stage: [] for stage in LIGHT}, added
