# settlement_widgets: two commands for a newcomer, `make lab` and `make test`.
# Every target installs what it needs (venv, npm packages, Debian chromium) and is idempotent:
# stamps make a second run quick.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY_STAMP := $(VENV)/.installed
NPM_STAMP := contracts/node_modules/.installed
INTEROP_STAMP := tests/interop/node_modules/.installed
ARTIFACTS_STAMP := settlement_widgets/_artifacts/.built
SOL_SOURCES := $(shell find contracts/src -name '*.sol' 2>/dev/null)
CHROMIUM ?= /usr/bin/chromium
LAB_FLAGS ?=
PYTEST_FLAGS ?=
# run as root (containers, CI): Jupyter refuses to start without --allow-root
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
# the app's Jupyter settings (idle-kernel culling, the Voila template, hidden cells): put first
# on Jupyter's config and data paths by `make lab`, as binder/start does on Binder
JUPYTER_APP := $(CURDIR)/jupyter-app

.PHONY: help setup lab test check lint contracts contracts-check snapshots chromium interop-deps \
        notebooks notebooks-refresh sepolia-rehearsal bench reliability dist docs clean

help:
	@echo "make lab     set up and open JupyterLab on notebooks/ (local sandbox)"
	@echo "make test    set up and run every test suite (what CI runs)"
	@echo "make check   ruff, mypy and the unit tests only: the edit-test loop (about a minute)"
	@echo "make bench   benchmarks (tables + benchmarks/results/latest.json)"
	@echo "make dist    the sdist and the wheel, compiled contracts included, into dist/"
	@echo "make docs    the documentation site into site/ (warnings fail it), then its link check"
	@echo "make sepolia-rehearsal  every notebook on its Sepolia profile (sepolia; notebook 06 and the dashboard's v1 path: sepolia-v1), twice, on the Sepolia twins"

# --- setup -------------------------------------------------------------------------------

$(PY_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,bench]'
	touch $@

# `npm install` (not `npm ci`): the lock cannot list anvil's other-platform optional packages
$(NPM_STAMP): contracts/package.json contracts/package-lock.json
	cd contracts && npm install --no-audit --no-fund --loglevel=error
	touch $@

$(INTEROP_STAMP): tests/interop/package.json tests/interop/package-lock.json
	cd tests/interop && npm install --no-audit --no-fund --loglevel=error
	touch $@

$(ARTIFACTS_STAMP): $(NPM_STAMP) contracts/build.js $(SOL_SOURCES)
	node contracts/build.js
	touch $@

# The local sandbox's chain after its deployment, saved once (settlement_widgets/_artifacts/
# snapshots/, not committed: it holds the npm PoolManager's bytecode), so a sandbox starts
# without sending its ~26 deployment transactions. Rebuilds only what is stale (a no-op run
# takes well under a second); a sandbox without a current snapshot deploys instead.
snapshots: $(PY_STAMP) $(ARTIFACTS_STAMP)
	$(BIN)/python -m settlement_widgets.sandbox.snapshot

contracts: $(ARTIFACTS_STAMP) snapshots

# Our compiled artifacts are not committed; this proves a rebuild is byte-identical.
contracts-check: $(ARTIFACTS_STAMP)
	node contracts/build.js --check

interop-deps: $(INTEROP_STAMP)

chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
	  echo "installing Debian chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

setup: $(PY_STAMP) contracts

# --- the two commands ----------------------------------------------------------------------

lab: setup
	SETTLEMENT_NETWORK=$${SETTLEMENT_NETWORK:-local} SETTLEMENT_API_NETWORK=$${SETTLEMENT_NETWORK:-local} \
	  SETTLEMENT_SHARED_SANDBOX=$${SETTLEMENT_SHARED_SANDBOX:-1} \
	  JUPYTER_CONFIG_PATH=$(JUPYTER_APP)/etc/jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH} \
	  JUPYTER_PATH=$(JUPYTER_APP)/share/jupyter$${JUPYTER_PATH:+:$$JUPYTER_PATH} \
	  $(BIN)/jupyter lab $(ALLOW_ROOT) \
	  --ServerApp.root_dir=notebooks $(LAB_FLAGS)

lint: $(PY_STAMP)
	$(BIN)/ruff check settlement_widgets tests benchmarks docs hatch_build.py
	$(BIN)/mypy

# the edit-test loop: lint, types and tests/unit (no chain, browser or notebook); `make test`
# stays the full suite. The unit tests read the compiled ABIs, hence the artifacts.
check: lint $(ARTIFACTS_STAMP)
	$(BIN)/pytest -q tests/unit $(PYTEST_FLAGS)

# the full suite. What waits on nothing runs alongside the rest (which mostly waits on its
# sandboxes, servers and browsers, keeping one core busy out of two): tests/unit (pure,
# CPU-bound), then the notebooks under nbval, then tests/package (wheel and sdist built and
# installed in their own venvs). In one process the suite took over 30 minutes. Their report
# is printed after the rest's; any of them failing fails the target.
test: setup interop-deps chromium lint
	@side_log=$$(mktemp); \
	( u=0; n=0; p=0; \
	  $(BIN)/pytest -p no:cacheprovider tests/unit $(PYTEST_FLAGS) || u=$$?; \
	  if ls notebooks/*.ipynb >/dev/null 2>&1; then \
	    $(NBVAL) -p no:cacheprovider --notebook-probes notebooks || n=$$?; fi; \
	  $(BIN)/pytest -p no:cacheprovider tests/package $(PYTEST_FLAGS) || p=$$?; \
	  [ $$u -eq 0 ] && [ $$n -eq 0 ] && [ $$p -eq 0 ] ) >"$$side_log" 2>&1 & side=$$!; \
	status=0; $(BIN)/pytest --ignore=tests/unit --ignore=tests/package $(PYTEST_FLAGS) || status=$$?; \
	wait $$side || status=$$?; \
	echo "=== tests/unit, notebooks, tests/package (ran alongside) ==="; cat "$$side_log"; \
	rm -f "$$side_log"; \
	exit $$status

# nbval's support files live in tests/nbval/ (notebooks/ holds only notebooks): its plugin is
# loaded with -p, which needs `python -m` (the repository on sys.path)
NBVAL := $(BIN)/python -m pytest -p tests.nbval.plugin --nbval --nbval-current-env \
  --nbval-sanitize-with tests/nbval/sanitize.cfg

# --notebook-probes: each notebook's checks (tests/nbval/probes.py) in the same run
notebooks: setup
	$(NBVAL) --notebook-probes notebooks

# re-execute every notebook in place (commit the result; nbval compares against it)
notebooks-refresh: setup
	for nb in notebooks/*.ipynb; do \
	  $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.store_widget_state=False --ExecutePreprocessor.record_timing=False "$$nb"; \
	done

# every notebook's Sepolia branch, top to bottom, twice in a row, against the Sepolia twin
# (tests/rehearsal/sepolia.py); `make test` runs its short form (tests/rehearsal/)
# notebooks 01-05 and the dashboard on the v0.5 twin (SETTLEMENT_NETWORK=sepolia), then notebook
# 06, the dashboard's v1 path and a payment across its two chains (Sepolia, Base Sepolia) on the
# v1 twin (SETTLEMENT_NETWORK=sepolia-v1); each twice
sepolia-rehearsal: setup
	$(BIN)/python -m tests.rehearsal.sepolia

bench: setup interop-deps
	$(BIN)/python -m benchmarks

reliability: setup interop-deps
	$(BIN)/python -m benchmarks.reliability

# the sdist and the wheel, both carrying the compiled contracts (checked against a fresh
# rebuild first; hatch_build.py refuses to build without them); tests/package/ builds both from a
# fresh copy and installs each into a new venv
dist: $(PY_STAMP) contracts-check
	$(BIN)/python -m build --outdir dist .

# the documentation site: the README, the notebooks with their outputs, the API reference from
# the docstrings; strict (a warning fails the build), then every link checked offline
docs: $(PY_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	$(BIN)/python docs/check_links.py site

clean:
	rm -rf site dist $(VENV) contracts/node_modules tests/interop/node_modules settlement_widgets/_artifacts
