"""DVC stage convert: a GGUF checkpoint shipped in a Python distribution -> a transformers checkpoint."""

from pathlib import Path

from autojudge.errors import InputError
from autojudge.io import write_json
from autojudge.models.gguf import convert_gguf, packaged_gguf
from autojudge.stage import run_stage, stage_arguments


def convert(params, args) -> None:
    if args.name not in params.convert:
        raise InputError(f"params convert has no entry {args.name!r} (has {sorted(params.convert)})")
    spec = params.convert[args.name]
    summary = convert_gguf(packaged_gguf(spec.distribution, spec.file), spec.out, spec.dtype)
    write_json(args.metrics, summary)
    print(summary)


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--name", required=True, help="the entry of params convert")
    parser.add_argument("--metrics", type=Path, required=True)
    run_stage("convert", convert, parser)
