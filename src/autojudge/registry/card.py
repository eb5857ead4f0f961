"""The head's card: what it is for, how it was made, and how fast and accurate it is (JSON + markdown)."""

from __future__ import annotations

from autojudge.bench import vllm_report
from autojudge.evaluation import comparison as compare
from autojudge.evaluation.crossdomain import head_table
from autojudge.evaluation.report import markdown_table
from autojudge.evaluation.sampled import greedy_and_sampled_markdown, sampled_section
from autojudge.heads.artifact import JudgeHead
from autojudge.params import Params

PROPOSER_NAMES = {"draft_model": "draft", "eagle": "EAGLE head"}  # pair.proposer as the card says it


def build_card(
    params: Params,
    head: JudgeHead,
    mining: dict,
    evaluation: dict,
    model_name: str,
    comparison: dict | None = None,
    bench: dict | None = None,
    crossdomain: dict | None = None,
    sampled: dict | None = None,
) -> dict:
    """Everything a reviewer needs to decide on promotion, as data."""
    card = {
        "model_name": model_name,
        "pair": {
            "name": params.pair.name,
            "proposer": params.pair.proposer,
            "draft": str(params.pair.draft),
            "target": str(params.pair.target),
            "dtype": params.pair.dtype,
        },
        "task": {
            "name": params.task.name,
            "mining_split": params.mining.split,
            "evaluation_split": evaluation["split"],
        },
        "data": {
            key: mining[key]
            for key in (
                "problems",
                "problems_without_answer",
                "mismatches",
                "important",
                "important_fraction",
                "problems_per_minute",
            )
            if key in mining
        },
        "head": {
            "features": head.features.source,
            "feature_groups": list(head.features.groups),
            "dimension": head.features.dimension,
            "threshold": head.threshold,
            "target_recall": params.train.target_recall,
            "threshold_policy": params.train.threshold_policy,
            "accuracy_budget": params.train.accuracy_budget,
            **{
                key: head.info[key]
                for key in (
                    "best_c",
                    "validation_auc",
                    "validation_recall",
                    "validation_accept_rate",
                    "calibration",
                    "cv_auc_by_c",
                )
                if key in head.info
            },
        },
        "evaluation": {
            "split": evaluation["split"],
            "window": params.evaluate.window,
            "headline": evaluation["headline"],
            "settings": evaluation["settings"],
        },
        "gates": {
            "max_accuracy_drop": params.promote.max_accuracy_drop,
            "min_mat_gain": params.promote.min_mat_gain,
            "temperature": params.promote.temperature,
        },
    }
    if comparison is not None:  # every rule and head against each other (stage compare)
        card["comparison"] = comparison
    if bench is not None:  # vLLM tokens/s, energy and judge overhead (stage bench)
        card["vllm_bench"] = vllm_report.card_section(bench)
    if sampled is not None and sampled.get("enabled"):  # the chosen points at a temperature (stage sampled)
        card["sampled"] = sampled_section(sampled)
    if crossdomain is not None:  # this head on every domain (stage crossdomain)
        card["crossdomain"] = {key: crossdomain[key] for key in ("window", "limit", "min_competence")} | {
            "rows": crossdomain["heads"][params.task.name]
        }
    return card


def _features(head: dict) -> str:
    """What the head reads, in words (cards of heads before feature groups: the hidden state only)."""
    groups = head.get("feature_groups", ["token_state"])
    return f"{', '.join(groups)} ({head['features']} hidden states, {head['dimension']} features)"


def card_markdown(card: dict) -> str:
    """The card for humans."""
    h, head, data = card["evaluation"]["headline"], card["head"], card["data"]
    lines = [
        f"# {card['model_name']}",
        "",
        f"Judge head for speculative decoding with {PROPOSER_NAMES[card['pair']['proposer']]} "
        f"`{card['pair']['draft']}` and target "
        f"`{card['pair']['target']}` on task **{card['task']['name']}**. Where the draft's token differs from "
        f"the target's choice, the head estimates p(important) from {_features(head)}; the mismatch is accepted when p < {head['threshold']:.4g}.",
        "",
        "## Result",
        "",
        f"At its threshold on the {card['evaluation']['split']} split (W={card['evaluation']['window']}): "
        f"**MAT {h['judge_mat']:.2f}** tokens per target pass against {h['exact_sd_mat']:.2f} for exact "
        f"speculative decoding (**{h['mat_gain_vs_exact_sd']:.2f}x**), accuracy **{100 * h['judge_accuracy']:.1f}%** "
        f"against {100 * h['target_accuracy']:.1f}% for the target alone "
        f"({100 * h['accuracy_drop_vs_target']:+.1f} points drop).",
        "",
        markdown_table(card["evaluation"]["settings"]),
        "",
        "## How it was made",
        "",
        f"- Mining (AutoJudge Algorithm 1) on the `{card['task']['mining_split']}` split: "
        f"{data.get('problems', '?')} problems, {data.get('mismatches', '?')} mismatches, "
        f"{100 * data.get('important_fraction', 0):.1f}% important.",
        f"- Logistic regression, C = {head.get('best_c')} by grouped cross-validated ROC-AUC; validation AUC "
        f"{head.get('validation_auc', 0):.3f}; {_threshold_sentence(head)}",
        f"- Promotion gates: accuracy drop vs exact SD <= {100 * card['gates']['max_accuracy_drop']:.1f} points, "
        f"MAT gain >= {card['gates']['min_mat_gain']:.2f}x.",
    ]
    if "comparison" in card:
        budget = compare.budget_key(card["gates"]["max_accuracy_drop"])
        lines += ["", *_comparison_section(card["comparison"], card.get("gate_result"), budget)]
    if "sampled" in card:
        lines += ["", *greedy_and_sampled_markdown(card["sampled"], card.get("comparison"))]
    if "crossdomain" in card:
        lines += ["", *_crossdomain_section(card["crossdomain"])]
    if "vllm_bench" in card:
        lines += ["", "## Speed and energy with vLLM", "", *vllm_report.section_markdown(card["vllm_bench"])]
    return "\n".join(lines) + "\n"


def _crossdomain_section(section: dict) -> list[str]:
    """Does the head transfer: its own domain and every other one, with intervals."""
    limit = section["limit"]
    return [
        "## Domain shift",
        "",
        f"This head at its threshold on every domain of the pipeline (W={section['window']}, "
        f"{f'first {limit}' if limit else 'all'} problems each), against target greedy and exact SD on the "
        "same problems; 95% paired-bootstrap intervals over problems. Below "
        f"{100 * section['min_competence']:.0f}% target accuracy a domain is outside the target's competence "
        "and says nothing about transfer.",
        "",
        head_table(section["rows"]),
    ]


def _threshold_sentence(head: dict) -> str:
    if head.get("threshold_policy") == "accuracy":
        return (
            f"threshold {head['threshold']:.4g}: the largest whose accuracy on the calibration split stays "
            f"within {100 * head['accuracy_budget']:.1f} points of target greedy (candidates between the "
            f"thresholds for 100% and {100 * head['target_recall']:.1f}% validation recall of important tokens)."
        )
    return (
        f"threshold set for {100 * head['target_recall']:.1f}% recall of important tokens (validation recall "
        f"{100 * head.get('validation_recall', 0):.1f}%, {100 * head.get('validation_accept_rate', 0):.1f}% of "
        "unimportant mismatches accepted)."
    )


def _comparison_section(comparison: dict, gate_result: dict | None, budget: str) -> list[str]:
    """Which judge to use: every method's point chosen on validation, its test figures and the verdicts;
    first, this head's point at the gate's ``budget`` against the ceiling."""
    ceiling = comparison.get("ceiling") and compare.ceiling_sentence(comparison["ceiling"], budget)
    lines = ["## Which judge to use", "", *([ceiling, ""] if ceiling else []), compare.markdown(comparison)]
    if gate_result and gate_result.get("use_instead"):
        lines += ["", f"**Use instead of this head:** {gate_result['use_instead']}."]
    return lines
