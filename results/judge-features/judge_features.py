"""What more labels and each feature buy a judge head (issue 63, items 2 and 4): an ablation by feature group
and a learning curve over mined problems, with grouped cross-validation and out-of-fold scores.

Per mismatch of Algorithm 1's records (one teacher-forced target pass per problem over prompt + its final
response, the important draft tokens appended as one-token branches: ``features.hidden_states``):

- A: the last hidden state that reads the draft token (the paper's feature, the project's head);
- B: the hidden state that predicted the mismatch (at the position before it: what the target wanted);
- C: free-rule scores from B's logits: log p of the draft token and of the target's top-1, their gap, the
  target's entropy, log(1 + rank) of the draft token;
- D: token classes (digit, space, punctuation, word) of the draft token, the target token and the previous one;
- E: the output-embedding rows of the two tokens (draft minus target).

Models: logistic regression (standardised, classes balanced, C from an inner grouped 3-fold search) and
gradient boosting (``HistGradientBoostingClassifier``, classes balanced, fixed settings) on the scalar groups;
5-fold cross-validation grouped by problem. The score is P(important); a mismatch is accepted below a
threshold. ``accepted at <= k%`` is the share of unimportant mismatches accepted while at most k% of the
important ones are, on the pooled out-of-fold scores; intervals are percentile bootstraps over problems.

Run from the repository root of a checkout whose target is built (``autojudge preset smollm2-eagle && dvc
repro finetune@smollm2-arith``); ``mined-extra`` is ``autojudge ceiling --problems 80 --out`` with mining.skip
440 (README.md here)::

    python results/judge-features/judge_features.py --name eagle \\
        --records results/proposers/importance/eagle-head results/proposers/importance-unseen/eagle-head \\
        --target models/smollm2-arith/target --curve 10 20 40 60 --repeats 5
    python results/judge-features/judge_features.py --name eagle-160 \\
        --records results/proposers/importance/eagle-head results/proposers/importance-unseen/eagle-head \\
        results/judge-features/mined-extra --target models/smollm2-arith/target --curve 10 20 40 80 128 --repeats 3
    python results/judge-features/judge_features.py --name toy-arith --records results/ceiling/toy-arith \\
        --target models/toy_mixed/target --curve 20 40 80 160 320 480 --repeats 3

Writes ``<name>.json``, ``<name>.md`` and ``<name>-curve.png`` here.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from autojudge.bench.machine import processor_name
from autojudge.features.hidden_states import last_hidden_states, plan_sequences
from autojudge.io import atomic_path, write_json
from autojudge.mining.search import MinedProblem
from autojudge.mining.shards import load_shard
from autojudge.models.pair import load_causal_lm
from autojudge.models.tokenizer import load_tokenizer

OUT = Path(__file__).parent
GROUPS = "ABCDE"
ALLOWANCES = (0.0, 0.01, 0.05)  # share of important mismatches a threshold may accept
C_GRID = (0.0003, 0.001, 0.003, 0.01, 0.1)
CLASSES = ("digit", "space", "punct", "word")


def token_class(text: str) -> int:
    if any(c.isdigit() for c in text):
        return 0
    if not text.strip():
        return 1
    return 2 if not any(c.isalnum() for c in text) else 3


@torch.inference_mode()
def encode(problems: list[MinedProblem], target_dir: Path, batch_size: int) -> dict[str, np.ndarray]:
    """Feature groups A-E, labels ``y`` and problem index ``problem`` of every mismatch."""
    model = load_causal_lm(target_dir, torch.float32, role="target")
    tokenizer = load_tokenizer(target_dir, "target")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    classes = {}

    def onehot(token: int) -> np.ndarray:
        if token not in classes:
            classes[token] = np.eye(len(CLASSES), dtype=np.float32)[token_class(tokenizer.decode([token]))]
        return classes[token]

    sequences, rows = plan_sequences(problems)
    states = last_hidden_states(model, sequences, pad, batch_size, "target")
    by_id = {p.id: (i, p) for i, p in enumerate(problems)}
    a, b, d, problem_index = [], [], [], []
    for row in rows:
        index, problem = by_id[row.problem_id]
        at = len(problem.prompt_ids) + row.position  # the mismatch's index in prompt + response
        trunk = problem.prompt_ids + problem.response_ids
        a.append(states[row.sequence][row.index])
        b.append(states[row.sequence][at - 1])
        d.append(np.concatenate([onehot(row.draft_token), onehot(row.target_token), onehot(trunk[at - 1])]))
        problem_index.append(index)
    hidden_b = torch.stack(b)
    logp = torch.log_softmax(model.get_output_embeddings()(hidden_b).float(), dim=-1)
    draft = torch.tensor([row.draft_token for row in rows])
    target = torch.tensor([row.target_token for row in rows])
    logp_draft = logp.gather(1, draft[:, None])[:, 0]
    top1 = logp.max(dim=1)
    rank = (logp > logp_draft[:, None]).sum(dim=1).float()
    entropy = -(logp.exp() * logp).sum(dim=1)
    scalars = torch.stack([logp_draft, top1.values, top1.values - logp_draft, entropy, torch.log1p(rank)], 1)
    embeddings = model.get_output_embeddings().weight
    return {
        "A": torch.stack(a).numpy(),
        "B": hidden_b.numpy(),
        "C": scalars.numpy(),
        "D": np.stack(d),
        "E": (embeddings[draft] - embeddings[target]).float().numpy(),
        "y": np.array([row.important for row in rows], dtype=int),
        "problem": np.array(problem_index),
        "argmax_is_target": (top1.indices == target).numpy(),
    }


def make_model(kind: str, c: float = 0.03):
    if kind == "hgb":
        return HistGradientBoostingClassifier(
            max_iter=200, learning_rate=0.05, max_leaf_nodes=15, class_weight="balanced", random_state=0
        )
    return make_pipeline(StandardScaler(), LogisticRegression(C=c, class_weight="balanced", max_iter=3000))


def fit_score(
    kind: str, x: np.ndarray, y: np.ndarray, groups: np.ndarray, test_x: np.ndarray, important_weight: float
) -> tuple[np.ndarray, float | None]:
    """Scores of ``test_x`` by a model fit on (x, y); logistic regression's C chosen by inner grouped CV.
    Training problems without an important mismatch (small toy draws) give every test mismatch one score."""
    c = None
    if len(set(y)) < 2:
        return np.full(len(test_x), float(y[0])), c
    if kind == "lr":
        inner = GroupKFold(n_splits=min(3, len(set(groups))))
        best = -1.0
        for candidate in C_GRID:
            scores = np.zeros(len(y))
            for fit, held in inner.split(x, y, groups):
                if len(set(y[fit])) < 2:
                    continue
                model = _fitted(kind, x[fit], y[fit], candidate, important_weight)
                scores[held] = model.predict_proba(x[held])[:, 1]
            auc = roc_auc_score(y, scores) if len(set(y)) == 2 else 0.0
            if auc > best:
                best, c = auc, candidate
    model = _fitted(kind, x, y, c or 0.03, important_weight)
    return model.predict_proba(test_x)[:, 1], c


def _fitted(kind: str, x: np.ndarray, y: np.ndarray, c: float, important_weight: float):
    model = make_model(kind, c)
    if kind == "lr" and important_weight != 1.0:  # balanced, then the important class weighted up
        n, positives = len(y), max(int(y.sum()), 1)
        weights = np.where(y == 1, important_weight * n / (2 * positives), n / (2 * (n - positives)))
        model.set_params(logisticregression__class_weight=None)
        return model.fit(x, y, logisticregression__sample_weight=weights)
    return model.fit(x, y)


def accepted_unimportant(scores: np.ndarray, y: np.ndarray, allowance: float) -> float:
    """Share of unimportant mismatches scored below the threshold that accepts at most ``allowance`` of the
    important ones (ties rejected)."""
    important = np.sort(scores[y == 1])
    k = int(np.floor(allowance * len(important)))
    threshold = important[k] if k < len(important) else np.inf
    return float(np.mean(scores[y == 0] < threshold))


def metrics(scores: np.ndarray, y: np.ndarray) -> dict[str, float]:
    out = {"roc_auc": float(roc_auc_score(y, scores))}
    for allowance in ALLOWANCES:
        out[f"accepted_at_{allowance:g}"] = accepted_unimportant(scores, y, allowance)
    return out


def bootstrap(scores: np.ndarray, y: np.ndarray, problem: np.ndarray, samples: int) -> dict[str, list[float]]:
    """95% percentile intervals of :func:`metrics` over problems resampled with replacement (seed 0)."""
    ids = np.unique(problem)
    members = [np.flatnonzero(problem == i) for i in ids]
    rng = np.random.default_rng(0)
    draws = []
    for _ in range(samples):
        rows = np.concatenate([members[i] for i in rng.integers(0, len(ids), len(ids))])
        if len(set(y[rows])) == 2:
            draws.append(metrics(scores[rows], y[rows]))
    return {key: [float(np.quantile([d[key] for d in draws], q)) for q in (0.025, 0.975)] for key in draws[0]}


def out_of_fold(data: dict, groups: str, kind: str, important_weight: float = 1.0) -> tuple[np.ndarray, list]:
    x = np.concatenate([data[g] for g in groups], axis=1)
    y, problem = data["y"], data["problem"]
    scores, chosen = np.zeros(len(y)), []
    for fit, held in GroupKFold(n_splits=5, shuffle=True, random_state=0).split(x, y, problem):
        scores[held], c = fit_score(kind, x[fit], y[fit], problem[fit], x[held], important_weight)
        chosen.append(c)
    return scores, chosen


def ablation(data: dict, samples: int) -> list[dict]:
    """Each group alone, all, all minus each (logistic regression); scalar groups by gradient boosting; the
    cost-sensitive variant; two free rules as they are."""
    runs: list[tuple[str, str, str, float]] = [(g, g, "lr", 1.0) for g in GROUPS]
    runs += [("all", GROUPS, "lr", 1.0)]
    runs += [(f"all - {g}", GROUPS.replace(g, ""), "lr", 1.0) for g in GROUPS]
    runs += [("all, important x10", GROUPS, "lr", 10.0)]
    runs += [(g, g, "hgb", 1.0) for g in ("C", "D", "CD")]
    y, problem = data["y"], data["problem"]
    table = []
    for free_rule, scores in (
        ("rule: 1 - p(draft token)", -data["C"][:, 0]),
        ("rule: log p(top-1) - log p(draft)", data["C"][:, 2]),
    ):
        table.append({"features": free_rule, "model": "none", **_row(scores, y, problem, samples)})
    for label, groups, kind, weight in runs:
        started = time.perf_counter()
        scores, chosen = out_of_fold(data, groups, kind, weight)
        row = {"features": label, "model": kind, **_row(scores, y, problem, samples)}
        row["C_per_fold"] = chosen if kind == "lr" else None
        table.append(row)
        seconds = time.perf_counter() - started
        print(f"ablation {label} {kind}: ROC-AUC {row['roc_auc']:.3f} ({seconds:.0f} s)", flush=True)
    return table


def _row(scores: np.ndarray, y: np.ndarray, problem: np.ndarray, samples: int) -> dict:
    point = {k: round(v, 4) for k, v in metrics(scores, y).items()}
    intervals = {k: [round(v, 4) for v in lh] for k, lh in bootstrap(scores, y, problem, samples).items()}
    return {**point, "ci95": intervals}


def learning_curve(data: dict, sizes: list[int], repeats: int, models: list[tuple[str, str]]) -> list[dict]:
    """Metrics against training problems: per repeat, 5 grouped folds; each fold's model is fit on the first
    ``n`` of its (shuffled) training problems and scores its held-out fold; scores pooled over folds."""
    y, problem = data["y"], data["problem"]
    ids = np.unique(problem)
    curve = []
    for groups, kind in models:
        x = np.concatenate([data[g] for g in groups], axis=1)
        for n in sizes:
            runs = []
            for repeat in range(repeats):
                rng = np.random.default_rng(repeat)
                folds = np.array_split(rng.permutation(ids), 5)
                scores = np.zeros(len(y))
                for held_ids in folds:
                    pool = rng.permutation(np.setdiff1d(ids, held_ids))
                    if n > len(pool):
                        break
                    fit = np.isin(problem, pool[:n])
                    held = np.isin(problem, held_ids)
                    scores[held], _ = fit_score(kind, x[fit], y[fit], problem[fit], x[held], 1.0)
                else:
                    runs.append(metrics(scores, y))
            if not runs:
                continue
            point = {k: round(float(np.mean([r[k] for r in runs])), 4) for k in runs[0]}
            spread = {k: round(float(np.std([r[k] for r in runs])), 4) for k in runs[0]}
            label = "all" if groups == GROUPS else groups
            curve.append({"features": label, "model": kind, "train_problems": n, **point, "std": spread})
            print(f"curve {label} {kind} n={n}: ROC-AUC {point['roc_auc']:.3f}", flush=True)
    return curve


def _pct(v: float) -> str:
    return f"{100 * v:.0f}%"


def markdown(result: dict) -> str:
    counts = result["data"]
    head = (
        f"# Judge features: {result['name']} ({counts['problems']} problems, {counts['mismatches']} mismatches, "
        f"{counts['important']} important)\n\n`{result['command']}` ({result['date']}, {result['processor']}, "
        f"{result['seconds']:.0f} s)\n\n"
    )
    lines = [
        "| features | model | ROC-AUC [95% CI] | unimportant accepted at <= 0 / 1% / 5% important accepted "
        "| at <= 1%: 95% CI |",
        "|---|---|---|---|---|",
    ]
    for row in result["ablation"]:
        ci = row["ci95"]["roc_auc"]
        accepted = " / ".join(_pct(row[f"accepted_at_{a:g}"]) for a in ALLOWANCES)
        low, high = row["ci95"]["accepted_at_0.01"]
        lines.append(
            f"| {row['features']} | {row['model']} | {row['roc_auc']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] | {accepted} "
            f"| [{_pct(low)}, {_pct(high)}] |"
        )
    curve = [
        "",
        f"Learning curve (mean ± sd over {result['repeats']} repeats of 5 grouped folds):",
        "",
        "| features | model | training problems | ROC-AUC | unimportant accepted at <= 0 / 1% / 5% |",
        "|---|---|---:|---|---|",
    ]
    for row in result["learning_curve"]:
        accepted = " / ".join(_pct(row[f"accepted_at_{a:g}"]) for a in ALLOWANCES)
        curve.append(
            f"| {row['features']} | {row['model']} | {row['train_problems']} | "
            f"{row['roc_auc']:.3f} ± {row['std']['roc_auc']:.3f} | {accepted} |"
        )
    return head + "\n".join(lines + curve) + "\n"


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(1, 2, figsize=(9, 3.5))
    for key in dict.fromkeys((r["features"], r["model"]) for r in result["learning_curve"]):
        rows = [r for r in result["learning_curve"] if (r["features"], r["model"]) == key]
        n = [r["train_problems"] for r in rows]
        label = f"{key[0]} ({key[1]})"
        axes[0].errorbar(n, [r["roc_auc"] for r in rows], [r["std"]["roc_auc"] for r in rows], marker="o")
        axes[1].plot(n, [100 * r["accepted_at_0.01"] for r in rows], marker="o", label=label)
    sizes = sorted({r["train_problems"] for r in result["learning_curve"]})
    axes[0].set(xlabel="training problems", ylabel="ROC-AUC (out of fold)", xscale="log")
    axes[1].set(xlabel="training problems", ylabel="% unimportant accepted", xscale="log")
    axes[1].set_title("at <= 1% of important accepted", fontsize=9)
    for axis in axes:
        axis.set_xticks(sizes, [str(n) for n in sizes])
        axis.minorticks_off()
    axes[1].legend(fontsize=8)
    figure.suptitle(f"Judge head learning curve: {result['name']}")
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, format="png", dpi=110)
    pyplot.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--records", type=Path, nargs="+", required=True, help="mined shard folders")
    parser.add_argument("--target", type=Path, required=True)
    parser.add_argument("--curve", type=int, nargs="+", default=[10, 20, 40, 60])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--samples", type=int, default=1000, help="bootstrap samples")
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    started = time.perf_counter()
    problems = [p for directory in args.records for p in load_shard(directory)]
    data = encode(problems, args.target, args.batch_size)
    print(f"features: {len(data['y'])} mismatches, {time.perf_counter() - started:.0f} s", flush=True)
    table = ablation(data, args.samples)
    curve = learning_curve(data, args.curve, args.repeats, [("A", "lr"), (GROUPS, "lr"), ("CD", "hgb")])
    result = {
        "name": args.name,
        "command": " ".join(["python results/judge-features/judge_features.py", *sys.argv[1:]]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "processor": processor_name(),
        "records": [str(r) for r in args.records],
        "target": str(args.target),
        "data": {
            "problems": len(problems),
            "mismatches": len(data["y"]),
            "important": int(data["y"].sum()),
            "target_argmax_is_recorded_target_token": int(data["argmax_is_target"].sum()),
            "dimensions": {g: int(data[g].shape[1]) for g in GROUPS},
        },
        "c_grid": list(C_GRID),
        "repeats": args.repeats,
        "ablation": table,
        "learning_curve": curve,
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_json(OUT / f"{args.name}.json", result)
    with atomic_path(OUT / f"{args.name}.md") as temporary:
        temporary.write_text(markdown(result))
    plot(result, OUT / f"{args.name}-curve.png")


if __name__ == "__main__":
    main()
