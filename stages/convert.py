"""DVC stage convert: a GGUF checkpoint shipped in a Python distribution -> a transformers checkpoint."""

from autojudge.models.gguf import convert_gguf, packaged_gguf
from autojudge.orchestration.stage import run_entry_stage


def convert(params, spec, name) -> dict:
    return convert_gguf(packaged_gguf(spec.distribution, spec.file), spec.out, spec.dtype)


if __name__ == "__main__":
    run_entry_stage("convert", "convert", convert, __doc__)
