"""The ``autojudge`` command line: one module per command group, assembled in ``cli.app`` (the app and
``main``, the console script's entry point).

- ``evaluate``: ``autojudge eval`` (decode a split with a rule, intervals) and ``autojudge interval``
- ``ceiling``: ``autojudge ceiling``, a quick look: Algorithm 1 on a few problems and the judge's ceiling
- ``toy``: ``autojudge toy train|measure``, the toy draft/target pair
- ``bench``: ``autojudge bench ...``, the speed benchmarks
- ``registry``: ``autojudge promote`` (and ``--rollback``)
- ``presets``: ``autojudge preset``
- ``plugin``: ``autojudge vllm check``, the vLLM judge plugin
- ``finetune``: ``autojudge finetune train|measure``, fine-tuned targets
- ``params``: ``autojudge params check``, the whole check of a parameters file
- ``options``: options the groups share

The top layer: it may import anything, and nothing in the library imports it. Commands import the
heavy modules (torch, vLLM, the models) inside their functions, so that ``autojudge --help`` stays fast.
"""
