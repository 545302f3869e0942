# Two commands do all the set-up on a fresh machine:  make demo  and  make test
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTHON ?= python3

.PHONY: demo test lint install clean

$(STAMP): pyproject.toml setup.py requirements/lock.txt requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0   # the CPU wheel first; an unpinned torch pulls CUDA
	$(BIN)/pip install -q -c requirements/constraints.txt -r requirements/lock.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/speakerflow demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .speakerflow build *.egg-info
