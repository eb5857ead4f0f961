"""DVC stage sampled: the comparison's chosen points and the head at its threshold decoded at a temperature
(params sampled) with several seeds, against exact speculative sampling, with the distribution shift."""

from pathlib import Path

from autojudge.evaluation.sampled import sampled_markdown, settings_chosen_in
from autojudge.evaluation.sampled_decode import decode_sampled
from autojudge.evaluation.setting import Setting
from autojudge.heads.artifact import context_head_file, load_head
from autojudge.io import read_json, write_json, write_text
from autojudge.models.runtime import pair_from, task_from
from autojudge.orchestration.stage import run_stage, stage_arguments


def sampled(params, args) -> None:
    spec = params.sampled
    if not spec.enabled:
        write_json(args.metrics, {"enabled": False})
        write_text(args.markdown, "Stage sampled is off (params sampled.enabled).\n")
        return
    head_files = {"judge": args.head}
    for method, path in (("judge-context", context_head_file(args.head)), ("selfjudge", args.selfjudge_head)):
        if path.is_file():
            head_files[method] = path
    head_point = Setting("judge", params.compare.window, threshold=load_head(args.head).threshold)
    settings = [head_point, *settings_chosen_in(read_json(args.comparison))]
    pair, task = pair_from(params), task_from(params)
    result = {
        "enabled": True,
        "temperature": spec.temperature,
        "top_p": spec.top_p,
        "seeds": spec.seeds,
        "window": params.compare.window,
        "head_setting": head_point.name,
        "splits": {
            split: decode_sampled(params, pair, task, settings, head_files, split) for split in spec.splits
        },
    }
    write_json(args.metrics, result)
    write_text(args.markdown, sampled_markdown(result) + "\n")
    print(sampled_markdown(result))


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--head", type=Path, default=Path("heads/head.safetensors"))
    parser.add_argument("--selfjudge-head", type=Path, default=Path("selfjudge/head/head.safetensors"))
    parser.add_argument("--comparison", type=Path, default=Path("metrics/compare.json"))
    parser.add_argument("--metrics", type=Path, default=Path("metrics/sampled.json"))
    parser.add_argument("--markdown", type=Path, default=Path("plots/sampled.md"))
    run_stage("sampled", sampled, parser)
