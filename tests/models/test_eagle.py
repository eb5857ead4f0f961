"""The EAGLE head on the committed toy target: vLLM's architecture, training, resuming, the saved head."""

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from autojudge.errors import InputError
from autojudge.models import eagle_training
from autojudge.models.eagle import agreement, build_examples, load_head, new_head, save_head
from autojudge.models.eagle_training import EagleTraining, train_head
from autojudge.models.pair import load_causal_lm
from autojudge.models.tokenizer import load_tokenizer
from autojudge.tasks.arith import arith_prompt
from autojudge.tasks.arith_generator import generate_split

LAYER = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"]
LAYER += ["mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "post_attention_layernorm"]
NAMES = {"fc.weight"} | {f"layers.0.{name}.weight" for name in LAYER}


@pytest.fixture(scope="module")
def target(repo, params):
    return load_causal_lm(repo / params.pair.target, torch.float32, role="target")


def _rows(tokenizer, count: int, seed: int) -> tuple[list[list[int]], list[int]]:
    """Toy word problems as prompt + solution + EOS tokens, and the prompt lengths."""
    sequences, prompt_lengths = [], []
    for problem in generate_split(count, seed=seed):
        prompt = tokenizer.encode(arith_prompt(problem.question))
        response = tokenizer.encode(" " + problem.solution, add_special_tokens=False)
        sequences.append([*prompt, *response, tokenizer.eos_token_id])
        prompt_lengths.append(len(prompt))
    return sequences, prompt_lengths


@pytest.fixture(scope="module")
def examples(repo, params, target):
    tokenizer = load_tokenizer(repo / params.pair.target)
    return {
        name: build_examples(target, *_rows(tokenizer, count, seed))
        for name, count, seed in (("train", 48, 101), ("held_out", 12, 102))
    }


def _settings(**changes) -> EagleTraining:
    values = dict(
        max_steps=40, batch_size=6, learning_rate=3e-3, eval_every=10, checkpoint_every=10, patience=3
    )
    return EagleTraining(**{**values, **changes})


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _rotate(x: torch.Tensor, theta: float) -> torch.Tensor:
    """Neox-style rotary embedding (vLLM's Llama, ``is_neox_style=True``) of ``(length, heads, dim)``."""
    length, _, dim = x.shape
    inverse = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    angles = torch.arange(length, dtype=torch.float32)[:, None] * inverse[None]
    cos, sin = angles.cos()[:, None], angles.sin()[:, None]
    first, second = x[..., : dim // 2], x[..., dim // 2 :]
    return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)


def _by_hand(head, tokens: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    """llama_eagle.py written out: fc([embed; hidden]), attention without an input norm, residual,
    post-attention norm, SwiGLU, residual, no final norm."""
    config, w = head.config, {k: v.double() for k, v in head.weights().items()}
    heads, dim, eps = config.num_attention_heads, config.head_dim, config.rms_norm_eps
    length = tokens.shape[0]
    x = torch.cat([head.embedding.double()[tokens], hidden.double()], dim=-1) @ w["fc.weight"].T
    q = (x @ w["layers.0.self_attn.q_proj.weight"].T).view(length, heads, dim)
    k = (x @ w["layers.0.self_attn.k_proj.weight"].T).view(length, heads, dim)
    v = (x @ w["layers.0.self_attn.v_proj.weight"].T).view(length, heads, dim)
    theta = config.rope_parameters["rope_theta"]
    q, k = _rotate(q, theta), _rotate(k, theta)
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(dim)
    scores = scores.masked_fill(torch.ones(length, length).triu(1).bool(), float("-inf"))
    attended = torch.einsum("hqk,khd->qhd", scores.softmax(-1), v).reshape(length, heads * dim)
    x = x + attended @ w["layers.0.self_attn.o_proj.weight"].T
    n = _rms(x, w["layers.0.post_attention_layernorm.weight"], eps)
    gate = torch.nn.functional.silu(n @ w["layers.0.mlp.gate_proj.weight"].T)
    return x + (gate * (n @ w["layers.0.mlp.up_proj.weight"].T)) @ w["layers.0.mlp.down_proj.weight"].T


def test_the_head_computes_vllms_eagle_llama_layer(target, examples):
    head = new_head(target, seed=3)
    with torch.no_grad():  # norm weights other than one, so that a skipped or misplaced norm shows
        head.layers[0].post_attention_layernorm.weight.uniform_(0.5, 1.5)
    assert set(head.weights()) == NAMES  # no input_layernorm, no final norm, no embedding or LM head
    train = examples["train"]
    tokens, hidden = train.tokens[0], train.hidden[0][:-1]
    with torch.no_grad():
        out = head(tokens[None], hidden[None])[0]
        wide = head(*train.batch([1, 0])[:2])[1, : len(tokens)]  # right padding changes nothing
    expected = _by_hand(head, tokens, hidden)
    torch.testing.assert_close(out.double(), expected, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(wide, out, rtol=1e-5, atol=1e-5)
    logits = head.logits(out)
    torch.testing.assert_close(logits, out @ target.lm_head.weight.T)


def test_examples_pair_each_token_with_the_previous_hidden_state(target, examples):
    train = examples["train"]
    sequence = [1, *train.tokens[0].tolist()]
    with torch.no_grad():
        output = target(torch.tensor([sequence]), output_hidden_states=True)
    # the target's last hidden state after the final norm is what its LM head reads
    torch.testing.assert_close(target.lm_head(train.hidden[0]), output.logits[0], rtol=1e-4, atol=1e-4)
    assert len(train.hidden[0]) == len(train.tokens[0]) + 1 == len(train.scored[0]) + 1
    prompt = len(sequence) - int(train.scored[0].sum())  # the first scored input token is generated
    assert not train.scored[0][: prompt - 1].any() and train.scored[0][prompt - 1 :].all()
    with pytest.raises(InputError, match="sequence 1 has 1 tokens"):
        build_examples(target, [[1, 2, 3], [4]])


def test_training_raises_held_out_agreement_and_saves_a_vllm_head(target, examples, tmp_path):
    untrained = agreement(new_head(target, seed=0), examples["held_out"])
    head, curve = train_head(target, examples["train"], examples["held_out"], _settings(), tmp_path)
    trained = agreement(head, examples["held_out"])
    assert trained > untrained + 0.2 and trained > 0.3, (untrained, trained)
    points = curve["points"]
    assert [p["step"] for p in points] == [0, 10, 20, 30, 40] and points[0]["agreement"] == round(
        untrained, 6
    )
    assert curve["best_agreement"] == trained and curve["stopped"] == "max_steps"
    assert json.loads((tmp_path / "curve.json").read_text()) == json.loads(json.dumps(curve))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt", "curve.json", "head"]
    assert sorted(p.name for p in (tmp_path / "head").iterdir()) == ["config.json", "model.safetensors"]
    config = json.loads((tmp_path / "head" / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["num_hidden_layers"] == 1
    assert config["hidden_size"] == 192 and config["vocab_size"] == 1024
    assert set(load_file(tmp_path / "head" / "model.safetensors")) == NAMES
    assert agreement(load_head(tmp_path / "head", target), examples["held_out"]) == trained


def test_a_resumed_run_ends_where_an_uninterrupted_one_does(target, examples, tmp_path, monkeypatch):
    settings = _settings(max_steps=20, checkpoint_every=5, noise=0.05)
    whole, whole_curve = train_head(target, examples["train"], examples["held_out"], settings, tmp_path / "a")
    calls = []
    real_loss = eagle_training._loss

    def killed_at_step_13(*args):
        calls.append(1)
        if len(calls) == 13:
            raise KeyboardInterrupt
        return real_loss(*args)

    monkeypatch.setattr(eagle_training, "_loss", killed_at_step_13)
    with pytest.raises(KeyboardInterrupt):
        train_head(target, examples["train"], examples["held_out"], settings, tmp_path / "b")
    monkeypatch.setattr(eagle_training, "_loss", real_loss)
    assert torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)["step"] == 10
    resumed, resumed_curve = train_head(
        target, examples["train"], examples["held_out"], settings, tmp_path / "b"
    )
    assert resumed_curve == whole_curve
    for name, tensor in whole.weights().items():
        assert torch.equal(resumed.weights()[name], tensor), name
    with pytest.raises(InputError, match="other settings or data"):
        train_head(target, examples["train"], examples["held_out"], _settings(seed=1), tmp_path / "b")


def test_training_stops_when_held_out_agreement_stops_improving(target, examples, tmp_path):
    settings = _settings(learning_rate=1e-12, eval_every=2, patience=2)
    _, curve = train_head(target, examples["train"], examples["held_out"], settings, tmp_path)
    assert curve["stopped"] == "patience" and [p["step"] for p in curve["points"]] == [0, 2, 4]
    assert curve["best_step"] == 0


def test_a_saved_head_reloads_with_the_same_outputs(target, examples, tmp_path):
    head = new_head(target, seed=5)
    save_head(head, tmp_path / "head")
    save_head(head, tmp_path / "head")  # replaced whole
    again = load_head(tmp_path / "head", target)
    tokens, hidden_in = examples["held_out"].batch([0, 1])[:2]
    with torch.no_grad():
        torch.testing.assert_close(again(tokens, hidden_in), head(tokens, hidden_in))
    (tmp_path / "head" / "model.safetensors").unlink()
    with pytest.raises(InputError, match=r"has no config\.json and model\.safetensors"):
        load_head(tmp_path / "head", target)
