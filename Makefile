# Two commands for a newcomer on a fresh machine:
#   make train   set up .venv if missing, then train an agent with the default config
#   make test    set up .venv if missing, then run the whole test suite
# (make test-fast: the same without the tests marked slow, for quick checks while editing)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup train test evaluate bench lint

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	# torch first: 2.13.0 is a local CPU build; any other request pulls a multi-GB CUDA build
	$(BIN)/python -m pip install torch==2.13.0
	$(BIN)/python -m pip install -e ".[dev,distributed,web]"
	# skyjo-web's browser tests drive Debian's chromium (as root, as in CI)
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(apt-get update && apt-get install -y chromium chromium-driver)
	touch $@

setup: $(BIN)/.installed

train: setup
	$(BIN)/python train.py

test: setup
	$(BIN)/python -m pytest

# the suite without the tests marked slow (pyproject.toml says which), on two pytest-xdist
# workers: under a minute on 2 cores (36 s measured, 72 s on one); CI runs `make test`,
# the whole suite, in one process
.PHONY: test-fast
test-fast: setup
	$(BIN)/python -m pytest -m "not slow" -n 2

evaluate: setup
	$(BIN)/python evaluate.py --agents ev greedy --games 1000 --seed 0

bench: setup
	$(BIN)/python benchmarks/core_throughput.py

lint: setup
	$(BIN)/ruff check .
