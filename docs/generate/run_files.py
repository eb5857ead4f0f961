"""What each metrics file of a committed pipeline run measured (``run-files <root> [task]``: ``results/<preset>``,
or ``.`` for the toy pair's outputs; the task's files, default arith, and the run's own files where the task
is the run's primary one), one table row per file, every figure read from it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .blocks import writer
from .sources import SourceError, exists, interval, load, lookup, percent, tracked_under


def _param(root: Path, key: str, default: object = SourceError) -> object:
    """A parameter of the run: its merged params.yaml where the run kept one, else the repository's; a key
    the run's params predate gives ``default`` where one is named."""
    try:
        return lookup(load(root / "params.yaml" if exists(root / "params.yaml") else "params.yaml"), key)
    except SourceError:
        if default is SourceError:
            raise
        return default


def _distill(root: Path, data: dict, entry: str) -> str:
    prompts = _param(root, f"distill/{entry}/eval_problems")
    return (
        f"the draft ({data['layers']} of the target's {data['target_layers']} layers): teacher-forced agreement "
        f"**{percent(data['agreement'])}** with the target's greedy tokens on {prompts} test prompts "
        f"({percent(data['agreement_before_training'])} before training), trained in {data['training_seconds']:.0f} s"
    )


def _eagle(root: Path, data: dict, entry: str) -> str:
    problems = _param(root, f"eagle/{entry}/eval_problems")
    return (
        f"the committed EAGLE head: teacher-forced agreement **{percent(data['held_out_agreement'])}** on "
        f"{problems} validation problems, which also chose its step ({data['best_step']} of {data['steps']})"
    )


def _mining(root: Path, data: dict, task: str) -> str:
    skip = _param(root, "mining/skip", 0)
    where = f" after the first {skip} (`mining.skip`)" if skip else ""
    return (
        f"Algorithm 1: **{data['problems']}** training problems{where}, {data['mismatches']:,} mismatches, "
        f"**{percent(data['important_fraction'])} important**, {data['minutes_this_run']:.1f} minutes"
    )


def _train(root: Path, data: dict, task: str) -> str:
    cross_validated = data[f"cv_auc_c_{data['best_c']:g}"]
    return (
        f"the AutoJudge head: validation ROC-AUC **{data['validation_auc']:.3f}** (grouped cross-validation "
        f"{cross_validated:.3f} at C = {data['best_c']:g}), threshold {data['threshold']:.4g} for "
        f"{percent(data['validation_recall'])} validation recall, which accepts "
        f"{percent(data['validation_accept_rate'], 0)} of validation mismatches"
    )


def _evaluate(root: Path, data: dict, task: str) -> str:
    threshold = load(root / "metrics" / task / "train.json")["threshold"]
    rows = {row["method"]: row for row in data["settings"]}
    judges = [row for row in data["settings"] if row["method"] == "judge"]
    judge = min(judges, key=lambda row: abs(row["threshold"] - threshold))
    exact = rows["exact"]
    alone = f", the draft alone {percent(rows['draft']['accuracy'])}" if "draft" in rows else ""
    return (
        f"first {exact['examples']} test problems: target {percent(rows['target']['accuracy'])}, exact SD "
        f"{percent(exact['accuracy'])} (MAT {exact['mat']:.2f}){alone}; the head at its registered threshold "
        f"**{percent(judge['accuracy'])}** at {judge['mat'] / exact['mat']:.2f}x exact SD's MAT, "
        f"{judge['accepted_mismatches']} lossy accepts"
    )


def _crossdomain(root: Path, data: dict, task: str) -> str:
    cells = [
        f"{row['domain']}: drop {interval(row['accuracy_drop'], 100, digits=1)} points at "
        f"{interval(row['mat_gain_vs_exact_sd'], unit='x')}"
        for row in data["heads"][task]
    ]
    return f"the {task} head on the first {data['limit']} problems per domain: " + "; ".join(cells)


def _selfjudge(root: Path, data: dict) -> str:
    auc = load(root / "metrics" / "train_selfjudge.json")["validation_auc"]
    return (
        f"SelfJudge: {data['mismatches']:,} mismatches of {data['problems']} problems, "
        f"{percent(data['important_fraction'])} labelled important; its head's validation ROC-AUC {auc:.3f}"
    )


def _compare(root: Path, data: dict, task: str) -> str:
    ceiling = data.get("ceiling")
    perfect = (
        f"; a perfect judge on the first {ceiling['problems']} validation problems: "
        f"**{interval(ceiling['ratio'], unit='x')}** exact SD's MAT"
        if ceiling
        else ""
    )
    return (
        f"each method's acceptance rate searched per budget on {data['protocol']['validation_examples']} "
        f"validation problems; the chosen points on {data['splits']['test']['examples']} test problems "
        f"(W = {data['protocol']['window']}), per-problem results{perfect}"
    )


def _sampled(root: Path, data: dict) -> str:
    problems = data["splits"]["test"]["problems"]
    return f"T = {data['temperature']}, seeds {data['seeds']}, {problems} problems per split"


def _bench(root: Path, data: dict) -> str:
    tuning = data.get("window_tuning")
    windows = f"window {data['windows'][0]}"
    if tuning:
        first, last = tuning["first_problem"] + 1, tuning["first_problem"] + tuning["problems"]
        windows = f"each setting's window chosen from {data['windows']} on problems {first}-{last} (untimed)"
    together = "every engine alive at once" if data.get("engines_together") else "the engines in turn"
    return (
        f"vLLM tokens/s ({data['date']}): {data['problems']} timed problems at batch sizes {data['batch_sizes']}, "
        f"{windows}, {together}"
    )


PROPOSERS: dict[str, Callable[[Path, dict, str], str]] = {"distill": _distill, "eagle": _eagle}
# per task: under metrics/<task>/, or the task's part of a shared file
PER_TASK: dict[str, Callable[[Path, dict, str], str]] = {
    "{task}/mining.json": _mining,
    "{task}/train.json": _train,
    "{task}/evaluate.json": _evaluate,
    "crossdomain.json": _crossdomain,
    "{task}/compare.json": _compare,
}
# the primary task's stages
PRIMARY: dict[str, Callable[[Path, dict], str]] = {
    "selfjudge.json": _selfjudge,
    "sampled.json": _sampled,
    "bench.json": _bench,
}


def _present(base: Path, names: dict) -> list[tuple[str, dict]]:
    """The files of ``names`` the run has, with their contents (a stage switched off writes enabled: false)."""
    found = [(name, load(base / "metrics" / name)) for name in names if exists(base / "metrics" / name)]
    return [(name, data) for name, data in found if data.get("enabled", True)]


def _rows(base: Path, task: str) -> list[tuple[str, str]]:
    primary = task == _param(base, "task/name")
    rows = []
    for stage, describe in PROPOSERS.items():  # metrics/<stage>/<entry>.json: the run's draft or head
        files = sorted(p for p in tracked_under(base / "metrics" / stage) if p.suffix == ".json")
        rows += [(f"{stage}/{p.name}", describe(base, load(p), p.stem)) for p in files]
    for pattern, describe in PER_TASK.items():
        for name, data in _present(base, {pattern.format(task=task): describe}):
            rows.append((name, describe(base, data, task)))
    if primary:
        rows += [(name, PRIMARY[name](base, data)) for name, data in _present(base, PRIMARY)]
    rows = [(f"metrics/{name}", text) for name, text in rows]
    if primary and exists(base / "promote.txt"):
        first, *reasons = load(base / "promote.txt").splitlines()
        outcome = "; ".join(reason.strip(" -") for reason in reasons)
        rows.append(
            (
                "promote.txt",
                f"`autojudge promote` afterwards: version {first.split(' version ')[-1]} {outcome}",
            )
        )
    return rows


@writer("run-files")
def run_files(page: Path, root: str, task: str = "arith") -> str:
    """A row per metrics file the run has for the task (and its promotion's outcome), with what it measured."""
    lines = ["| file | figure |", "|---|---|"]
    lines += [f"| `{name}` | {text} |" for name, text in _rows(Path(root), task)]
    return "\n".join(lines)
