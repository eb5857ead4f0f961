"""Generation through an OpenAI-compatible completions endpoint (what `vllm serve` exposes).

Prompts go out as token ids; vLLM's `return_token_ids` brings the generated ids back, so no
re-tokenization (and no "token healing") happens. Servers that do not return ids are refused.
Requests run concurrently so that the server batches them (AutoJudge appendix R). Each request asks for
the plugin's lossless rule (``vllm_xargs``), so that a server whose engine serves a lossy rule still
continues with the target's greedy tokens; a server without the plugin ignores the key.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from autojudge.errors import InputError

LOSSLESS = {"autojudge_rule": "exact"}  # the plugin's per-request rule (autojudge.vllm_plugin.config)


class OpenAIEngine:
    """Greedy continuations from a served model, one request per prefix, sent in parallel."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        eos_token_ids: set[int],
        concurrency: int = 16,
        timeout: float = 600.0,
    ) -> None:
        self.url = base_url.rstrip("/") + "/completions"
        self.model = model
        self.eos_token_ids = eos_token_ids
        self.concurrency = concurrency
        self.timeout = timeout

    def _complete(self, prefix: list[int], max_new_tokens: int) -> list[int]:
        if max_new_tokens <= 0:
            return []
        body = {
            "model": self.model,
            "prompt": prefix,
            "max_tokens": max_new_tokens,
            "temperature": 0.0,
            "stop_token_ids": sorted(self.eos_token_ids),
            "return_token_ids": True,
            "skip_special_tokens": False,
            "vllm_xargs": LOSSLESS,
        }
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = json.loads(response.read())
        except urllib.error.URLError as error:
            raise InputError(f"openai engine: request to {self.url} failed: {error}") from None
        choice = payload["choices"][0]
        if choice.get("token_ids") is None:
            raise InputError(
                f"openai engine: {self.url} did not return token ids (needs vLLM's return_token_ids)"
            )
        return [int(t) for t in choice["token_ids"]]

    def continue_prefixes(self, prefixes: list[list[int]], max_new_tokens: list[int]) -> list[list[int]]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._complete, prefixes, max_new_tokens))

    def close(self) -> None:
        """Nothing to release: the server is not ours."""
