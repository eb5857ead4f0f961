"""The assembled app (``cli.app``): its commands, its fast start, and user errors as one clear line."""

import subprocess
import sys

COMMANDS = (
    "eval",
    "promote",
    "preset",
    "interval",
    "ceiling",
    "toy",
    "bench",
    "vllm",
    "finetune",
    "eagle",
    "params",
)


def test_app_lists_every_command_in_order_without_importing_heavy_modules():
    script = (
        "import sys, click, typer; from autojudge.cli.app import app; group = typer.main.get_command(app); "
        "print(*group.list_commands(click.Context(group))); "
        "print(*[name for name in ('torch', 'transformers', 'vllm', 'numpy') if name in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    commands, heavy = result.stdout.split("\n")[:2]
    assert tuple(commands.split()) == COMMANDS
    assert heavy == "", f"importing the app imports {heavy}: keep heavy imports inside the commands"


def test_bad_input_is_one_clear_line_and_status_2(autojudge, tmp_path):
    (tmp_path / "params.yaml").write_text("decoding: {window: -1}\n")
    result = autojudge("eval", "--params", str(tmp_path / "params.yaml"), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "decoding.window" in result.stderr
    assert "Traceback" not in result.stderr

    (tmp_path / "params.yaml").write_text("task: {name: arith, data_dir: nowhere}\n")
    result = autojudge("eval", "--params", str(tmp_path / "params.yaml"), cwd=tmp_path)
    assert result.returncode == 2
    assert "data file not found: nowhere/test.jsonl" in result.stderr

    (tmp_path / "params.yaml").write_text("{}\n")  # the toy defaults: no real target to train for
    result = autojudge(
        "eagle", "train", "--name", "nope", "--params", str(tmp_path / "params.yaml"), cwd=tmp_path
    )
    assert result.returncode == 2
    assert "params eagle has no entry 'nope' (has [])" in result.stderr
