import json
import subprocess
import sys

from autojudge.evaluation.figures import ProblemFigures, figure_columns, figures_from_columns


def test_columns_round_trip_through_json():
    problems = [ProblemFigures("a", True, 10, 3), ProblemFigures("b", False, 7, 7)]
    columns = json.loads(json.dumps(figure_columns(problems)))
    assert columns == {"id": ["a", "b"], "correct": [True, False], "tokens": [10, 7], "target_passes": [3, 7]}
    assert figures_from_columns(columns) == problems


def test_reading_a_results_file_imports_no_model_stack():
    """``autojudge interval`` reads per-problem figures in a second, not after torch and transformers."""
    script = (
        "import sys; import autojudge.evaluation.intervals; "
        "print(*[name for name in ('torch', 'transformers', 'vllm') if name in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
