"""DVC stage train_selfjudge: the train stage on SelfJudge's labels -> selfjudge/head (nothing when off)."""

from pathlib import Path

from train import train  # a sibling stage script: stages/ is first on sys.path when run as a script

from autojudge.io import write_json
from autojudge.orchestration.stage import run_stage, stage_arguments
from autojudge.selfjudge import DISABLED


def train_selfjudge(params, args) -> None:
    if not params.selfjudge.enabled or (args.features / DISABLED).exists():
        args.out.mkdir(parents=True, exist_ok=True)
        write_json(args.out / DISABLED, {"enabled": False})
        write_json(args.metrics, {"enabled": False})
        print("selfjudge.enabled is false: no SelfJudge head")
        return
    train(params, args)


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--features", type=Path, default=Path("selfjudge/features"))
    parser.add_argument("--out", type=Path, default=Path("selfjudge/head"))
    parser.add_argument("--metrics", type=Path, default=Path("metrics/train_selfjudge.json"))
    parser.add_argument("--plots", type=Path, default=Path("selfjudge/head"))
    # the comparison sweeps its thresholds; only the registered head needs one; the context head is AutoJudge's
    parser.set_defaults(calibrate=False, context=False)
    run_stage("train_selfjudge", train_selfjudge, parser)
