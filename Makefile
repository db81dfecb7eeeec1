# ioaz: two commands set everything up on a fresh Debian 12 machine:
#   make run    install what is missing, build, run the main job
#   make test   install what is missing, build, run every test
# Every install step is idempotent: it checks before it installs.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

# Debian packages the build and the tests need (ENVIRONMENT.md lists what works here).
APT_PACKAGES := clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev make gcc fio util-linux \
                prometheus qemu-system-x86 busybox-static cpio \
                linux-headers-6.1.0-56-amd64 linux-source-6.1

BPF_OBJ := bpf/build/ioaz.bpf.o

.PHONY: all deps apt-deps venv bpf run observe test test-unit test-integration test-kmod bench lint clean

all: bpf venv

deps: apt-deps venv

apt-deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	else echo "Debian packages: all present"; fi

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev,learn,lab]'
	@touch $@

bpf: apt-deps
	$(MAKE) -C bpf

# The main job: ioazd in the foreground on this machine's disks with the default config,
# printing one JSON line per decision (Ctrl-C restores every original setting).
run: deps bpf
	$(VENV)/bin/ioazd --config deploy/ioaz.yaml

# A live view of every disk's workload, without changing anything.
observe: deps bpf
	$(VENV)/bin/ioazctl observe

test: deps bpf
	$(PY) -m pytest -ra tests

test-unit: venv
	$(PY) -m pytest -ra tests/unit

test-integration: deps bpf
	$(PY) -m pytest -ra tests/integration

test-kmod: deps
	$(PY) -m pytest -ra tests/kmod

bench: deps bpf
	$(VENV)/bin/ioaz-lab bench probe

lint: venv
	$(VENV)/bin/ruff check agent tests
	$(VENV)/bin/mypy agent/ioaz

clean:
	$(MAKE) -C bpf clean
	rm -rf $(VENV) build *.egg-info
