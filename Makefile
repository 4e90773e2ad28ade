# The README's two set-up commands are `make run` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: run test test-slow install lint typecheck unit bench clean

# Everything (the test tools, Ray and the `all` extra: plots and the LLM client) at the versions
# constraints.txt pins, so a developer's and CI's environments are the same.
$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[test,ray,all]'
	touch $(STAMP)

install: $(STAMP)

# Main job on the embedded defaults: no network, no API key.
# A guided search (cost guide, budget 32) of one representative instance per op family of
# every target; the report is written to results/bench/latest/report.md.
run: install
	$(BIN)/zomboss kb build
	$(BIN)/zomboss workloads
	$(BIN)/zomboss bench --subset --workers 2

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy zomboss targets

unit: install
	$(BIN)/pytest -n 2 -m "not slow"

# The long end-to-end checks (the full verification of the largest suite defaults, the Ray
# bench, the slow probes), marked `slow`; CI runs them after `make test`.
test-slow: install
	$(BIN)/pytest -n 2 -m slow

test: lint typecheck unit

bench: install
	$(BIN)/python scripts/bench_kb.py

clean:
	rm -rf $(VENV) build *.egg-info
