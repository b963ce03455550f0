# Starling — one-command setup, demo, tests and benchmarks.
# Every target installs what it needs, so each works on a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
WEB_STAMP := src/starling/server/static/.built
WARM_STAMP := $(VENV)/.kernels-warm
SCENE ?=
# pytest-xdist workers for `make test` (the CI machine has two cores)
TEST_WORKERS ?= 2

.PHONY: setup demo test test-fast bench web warm system-deps clean

setup: $(STAMP) web warm

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

# The front-end is built into the package's static folder (skipped while web/ has no package.json).
web: $(WEB_STAMP)

$(WEB_STAMP): $(shell find web -type f -not -path 'web/node_modules/*' 2>/dev/null)
	@if [ -f web/package.json ]; then \
		cd web && npm ci --no-audit --no-fund --loglevel=error && npm run build; \
	else mkdir -p src/starling/server/static; fi
	touch $(WEB_STAMP)

# Compile the kernels of every built-in scenario into Numba's on-disk cache (`starling warm`, one process per core, with a
# progress bar): about a minute once on a fresh machine, so that the first `make demo` shows animals
# within seconds. Runs again only when a source file or a scenario changed (the stamp is older).
# compileall writes Starling's bytecode too, which Python does not do itself where
# PYTHONDONTWRITEBYTECODE is set (as on CI machines): every process would compile the sources again.
warm: $(WARM_STAMP)

$(WARM_STAMP): $(STAMP) $(WEB_STAMP) $(shell find src/starling \( -name '*.py' -o -name '*.toml' \) 2>/dev/null)
	$(BIN)/python -m compileall -q src/starling
	$(BIN)/starling warm
	touch $(WARM_STAMP)

# Debian packages the browser tests need (Chromium for Playwright). Needs root or sudo.
system-deps:
	@if ! command -v chromium >/dev/null 2>&1; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

demo: setup
	$(BIN)/starling demo $(SCENE)

test: setup system-deps
	$(BIN)/lint-imports
	@if [ -f web/package.json ]; then cd web && npm test --silent; fi
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

test-fast: setup
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "not browser and not slow"

bench: setup
	$(BIN)/starling bench --json

clean:
	rm -rf $(VENV) src/starling/server/static web/node_modules .pytest_cache
