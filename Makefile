# ioaz: two commands set everything up on a fresh Debian 12 machine:
#   make run    install what is missing, build, run the main job
#   make test   install what is missing, build, run every test
# Every install step is idempotent: it checks before it installs.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

# What ioazd needs to run (the .deb's Depends), what builds its BPF object, and what the
# tests, the testbed and the packaging need besides (ENVIRONMENT.md lists what works here).
RUNTIME_PACKAGES := python3 python3-yaml python3-prometheus-client libbpf1
BPF_BUILD_PACKAGES := clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev make
APT_PACKAGES := $(RUNTIME_PACKAGES) $(BPF_BUILD_PACKAGES) gcc fio util-linux uidmap \
                prometheus qemu-system-x86 busybox-static cpio mmdebstrap \
                linux-headers-6.1.0-56-amd64 linux-source-6.1 linux-headers-6.12-amd64 linux-source-6.12 \
                debhelper dh-dkms dh-python dkms man-db bash-completion ansible-lint

BPF_OBJ := bpf/build/ioaz.bpf.o

.PHONY: all deps apt-deps install-deps bpf-deps venv bpf install uninstall deb run observe test test-unit \
        test-integration test-kmod testbed bench lint clean

all: bpf venv

deps: apt-deps venv

# apt-get install of the packages in $(1) that are missing
define apt_install
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else echo "Debian packages: all present"; fi
endef

apt-deps:
	$(call apt_install,$(APT_PACKAGES))

# make install on a server: the runtime and the BPF object's compiler, not the test tools
install-deps:
	$(call apt_install,$(RUNTIME_PACKAGES) $(BPF_BUILD_PACKAGES))

# the simulator's hot modules compiled with mypyc into build/mypyc (skipped when current);
# without them it runs interpreted (`$(PY) -m ioaz.sim.native` says which)
venv: $(STAMP)
	@$(PY) -m ioaz.sim.native build || echo "simulator: not compiled, it runs interpreted"

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev,learn,lab]'
	@touch $@

bpf: bpf-deps
	$(MAKE) -C bpf

bpf-deps:
	$(call apt_install,$(BPF_BUILD_PACKAGES))

# The main job: ioazd in the foreground on this machine's disks with the default config,
# printing one JSON line per change (Ctrl-C restores every original setting).
run: deps bpf
	$(VENV)/bin/ioazd --config deploy/ioaz.yaml

# A live view of every disk's workload, without changing anything.
observe: deps bpf
	$(VENV)/bin/ioazctl observe

# Three steps, each using both cores without letting a busy core disturb a timed test:
# 1. the testbed's guests in two lanes, ioazd under the guest's systemd (its ansible role alone
#    takes ~10 minutes under TCG) beside the other guests; a guest runs on one host thread
#    (tcg,thread=single), so each lane has a core;
# 2. the kmod tests' guests (one core) beside the unit tests' pure Python and the packaging tests
#    (make deb with its DKMS build, make install, a wheel: nothing in them is timed), at nice 10
#    so that the guest, whose waits are timed, keeps the core it needs;
# 3. the other root integration tests (real loop devices, fio, BPF), alone.
# Every step runs whatever the one before it did; the logs of the lanes beside are printed after.
PYTEST := $(PY) -m pytest -ra --durations=15
PACKAGING_TESTS := tests/integration/test_debian_package.py tests/integration/test_ctl_install.py \
                   tests/integration/test_wheel.py
test: deps bpf
	@mkdir -p build
	@( $(PYTEST) tests/testbed/test_guest_ioazd.py > build/test-guest-ioazd.log 2>&1; \
	   echo $$? > build/test-guest-ioazd.rc ) & \
	$(PYTEST) tests/testbed --ignore=tests/testbed/test_guest_ioazd.py; trc=$$?; \
	wait; echo "=============== tests/testbed/test_guest_ioazd.py, run beside ==============="; \
	cat build/test-guest-ioazd.log; grc=$$(cat build/test-guest-ioazd.rc); \
	( nice -n 10 $(PYTEST) tests/unit > build/test-unit.log 2>&1; \
	   echo $$? > build/test-unit.rc ) & \
	( nice -n 10 $(PYTEST) $(PACKAGING_TESTS) > build/test-packaging.log 2>&1; \
	   echo $$? > build/test-packaging.rc ) & \
	$(PYTEST) tests/kmod; krc=$$?; \
	wait; echo "=============== tests/unit, run beside the kmod tests ==============="; \
	cat build/test-unit.log; urc=$$(cat build/test-unit.rc); \
	echo "=============== the packaging tests, run beside the kmod tests ==============="; \
	cat build/test-packaging.log; prc=$$(cat build/test-packaging.rc); \
	$(PYTEST) tests/integration $(PACKAGING_TESTS:%=--ignore=%); irc=$$?; \
	echo "make test: exit status of testbed $$trc, guest ioazd $$grc, kmod $$krc, unit $$urc," \
	  "packaging $$prc, integration $$irc"; \
	[ $$trc -eq 0 ] && [ $$grc -eq 0 ] && [ $$krc -eq 0 ] && [ $$urc -eq 0 ] && \
	  [ $$prc -eq 0 ] && [ $$irc -eq 0 ]

test-unit: venv
	$(PY) -m pytest -ra tests/unit

test-integration: deps bpf
	$(PY) -m pytest -ra tests/integration

test-kmod: deps
	$(PY) -m pytest -ra tests/kmod

# The storage server in a VM: a Debian 12 image from Debian's packages (/var/cache/ioaz/testbed/,
# the machine's, shared by every checkout; rebuilt only when its recipe changes), the probe and
# the elevators built for its kernel.
testbed: deps bpf
	$(VENV)/bin/ioaz-lab testbed build
	$(MAKE) -C kmod KDIR=$$(ls -d /usr/src/linux-headers-6.12.*-amd64 | grep -v -e -rt- -e -cloud- | sort -V | tail -1)
	$(MAKE) -C kmod KDIR=/usr/src/linux-headers-6.1.0-56-amd64

# Long experiments (hours): their figures go to the results documents (docs/).
bench: deps bpf testbed
	$(VENV)/bin/ioaz-lab bench probe && $(VENV)/bin/ioaz-lab bench daemon && \
	$(VENV)/bin/ioaz-lab bench scale && $(VENV)/bin/ioaz-lab bench soak && \
	$(VENV)/bin/ioaz-lab bench report --real --out reports && $(VENV)/bin/ioaz-lab bench learn && \
	$(VENV)/bin/ioaz-lab bench testbed --out reports && \
	for level in 5 10; do $(VENV)/bin/ioaz-lab bench testbed --raid $$level --members 4 \
	    --workloads phases,par-read,zero --contenders none,mq-deadline,bfq,kyber,ioazd,ioazd-kernel \
	    --runtime 15 --phase 15 --out reports || exit 1; done

lint: venv
	$(VENV)/bin/ruff check agent tests
	$(VENV)/bin/mypy agent/ioaz

clean:
	$(MAKE) -C bpf clean
	rm -rf $(VENV) build *.egg-info

# -- make install: ioazd, ioazctl, the unit, tmpfiles, sysusers, man pages, completion and ----
# /etc/ioaz/ioaz.yaml. Runs on Debian's /usr/bin/python3 (python3-yaml, python3-prometheus-client),
# not the venv. DESTDIR stages the tree elsewhere (the .deb, tests); then nothing outside it is
# touched.
PREFIX     ?= /usr/local
SBINDIR    ?= $(PREFIX)/sbin
SYSCONFDIR ?= /etc
IOAZ_LIB   := $(PREFIX)/lib/ioaz
UNITDIR    ?= $(PREFIX)/lib/systemd/system
MANDIR     ?= $(PREFIX)/share/man
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
SYSPY      ?= /usr/bin/python3
POSTINSTALL ?= yes   # no: skip groupadd, tmpfiles and daemon-reload (tests, packaging)

install: install-deps bpf
	install -d $(DESTDIR)$(IOAZ_LIB)/bpf/build $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(SBINDIR) \
	  $(DESTDIR)$(SYSCONFDIR)/ioaz $(DESTDIR)$(UNITDIR) $(DESTDIR)$(PREFIX)/lib/tmpfiles.d \
	  $(DESTDIR)$(PREFIX)/lib/sysusers.d $(DESTDIR)$(PREFIX)/share/ioaz \
	  $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(COMPLETIONDIR)
	rm -rf $(DESTDIR)$(IOAZ_LIB)/agent $(DESTDIR)$(IOAZ_LIB)/decision_matrices
	tar --exclude=__pycache__ -cf - agent/ioaz decision_matrices README.md | tar -xf - -C $(DESTDIR)$(IOAZ_LIB)
	install -m 0644 $(BPF_OBJ) $(DESTDIR)$(IOAZ_LIB)/bpf/build/ioaz.bpf.o
	install -m 0644 bpf/ioaz_bcc.c bpf/ioaz.h bpf/counting.bpf.h $(DESTDIR)$(IOAZ_LIB)/bpf/
	for t in $(SBINDIR)/ioazd:ioaz.daemon.main $(PREFIX)/bin/ioazctl:ioaz.cli.ioazctl; do \
	  printf '#!%s -I\nimport sys\nsys.path.insert(0, "%s/agent")\nfrom %s import main\nsys.exit(main())\n' \
	    $(SYSPY) $(IOAZ_LIB) $${t#*:} > $(DESTDIR)$${t%%:*}; \
	  chmod 0755 $(DESTDIR)$${t%%:*}; \
	done
	sed -e 's|\.\./decision_matrices|$(IOAZ_LIB)/decision_matrices|' deploy/ioaz.yaml > $(DESTDIR)$(SYSCONFDIR)/ioaz/ioaz.yaml.dist
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/ioaz/ioaz.yaml ]; then \
	  echo "kept $(SYSCONFDIR)/ioaz/ioaz.yaml; the shipped defaults are in ioaz.yaml.dist"; \
	else mv $(DESTDIR)$(SYSCONFDIR)/ioaz/ioaz.yaml.dist $(DESTDIR)$(SYSCONFDIR)/ioaz/ioaz.yaml; fi
	sed -e 's|/usr/local/sbin|$(SBINDIR)|g; s|/usr/local/lib/ioaz|$(IOAZ_LIB)|g; s|/etc/ioaz|$(SYSCONFDIR)/ioaz|g' \
	  deploy/systemd/ioazd.service > $(DESTDIR)$(UNITDIR)/ioazd.service
	install -m 0644 deploy/systemd/ioaz.tmpfiles.conf $(DESTDIR)$(PREFIX)/lib/tmpfiles.d/ioaz.conf
	install -m 0644 deploy/systemd/ioaz.sysusers.conf $(DESTDIR)$(PREFIX)/lib/sysusers.d/ioaz.conf
	install -m 0644 deploy/man/ioaz.yaml.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 deploy/man/ioazd.8 deploy/man/ioazctl.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 deploy/bash-completion/ioazctl $(DESTDIR)$(COMPLETIONDIR)/ioazctl
	ln -sf ioazctl $(DESTDIR)$(COMPLETIONDIR)/ioazd
	cp -r deploy/prometheus deploy/grafana $(DESTDIR)$(PREFIX)/share/ioaz/
	@if [ -z "$(DESTDIR)" ] && [ "$(POSTINSTALL)" = yes ]; then \
	  getent group ioaz >/dev/null || groupadd --system ioaz; \
	  if [ -d /run/systemd/system ]; then systemd-tmpfiles --create ioaz.conf 2>/dev/null || true; \
	    systemctl daemon-reload; fi; \
	  echo "installed; start it with: systemctl enable --now ioazd"; fi

uninstall:
	rm -rf $(DESTDIR)$(IOAZ_LIB) $(DESTDIR)$(PREFIX)/share/ioaz
	rm -f $(DESTDIR)$(SBINDIR)/ioazd $(DESTDIR)$(PREFIX)/bin/ioazctl \
	  $(DESTDIR)$(UNITDIR)/ioazd.service $(DESTDIR)$(PREFIX)/lib/tmpfiles.d/ioaz.conf \
	  $(DESTDIR)$(PREFIX)/lib/sysusers.d/ioaz.conf $(DESTDIR)$(MANDIR)/man5/ioaz.yaml.5 \
	  $(DESTDIR)$(MANDIR)/man8/ioazd.8 $(DESTDIR)$(MANDIR)/man8/ioazctl.8 \
	  $(DESTDIR)$(COMPLETIONDIR)/ioazctl $(DESTDIR)$(COMPLETIONDIR)/ioazd
	@echo "left $(SYSCONFDIR)/ioaz/ioaz.yaml and the group ioaz in place"

# -- make deb: build/deb/ioaz_VERSION_all.deb and ioaz-dkms_VERSION_all.deb --------------------
# dpkg-buildpackage on a copy of the sources with deploy/debian as its debian/ (the top level of
# the checkout stays as it is); the BPF object is compiled by the package build itself.
# DEBFULLNAME="Name" DEBEMAIL=addr make deb: the packages' maintainer (default: deploy/debian's).
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
DEB_SRC := build/deb/ioaz-$(VERSION)

deb: bpf-deps
	$(call apt_install,debhelper dh-dkms dh-python)
	rm -rf build/deb && mkdir -p $(DEB_SRC)
	tar --exclude=__pycache__ --exclude=build --exclude='*.ko' -cf - Makefile pyproject.toml README.md \
	  agent/ioaz bpf decision_matrices deploy kmod | tar -xf - -C $(DEB_SRC)
	cp -r deploy/debian $(DEB_SRC)/debian
	@# who builds the package maintains it: DEBFULLNAME and DEBEMAIL, as dch reads them
	if [ -n "$$DEBEMAIL" ]; then \
	  export WHO="$${DEBFULLNAME:-$$DEBEMAIL} <$$DEBEMAIL>"; \
	  if [ "$$(printf %s "$$WHO" | wc -l)" -ne 0 ]; then \
	    echo "make deb: DEBFULLNAME or DEBEMAIL holds a newline: '$$WHO'" >&2; exit 2; fi; \
	  for f in control changelog; do \
	    awk '/^Maintainer: /  { print "Maintainer: " ENVIRON["WHO"]; next } \
	         /^ -- .*>  /     { sub(/^ -- .*>  /, ""); print " -- " ENVIRON["WHO"] "  " $$0; next } \
	         { print }' $(DEB_SRC)/debian/$$f > $(DEB_SRC)/debian/$$f.new && \
	    mv $(DEB_SRC)/debian/$$f.new $(DEB_SRC)/debian/$$f || exit 1; done; fi
	cd $(DEB_SRC) && dpkg-buildpackage -b -us -uc > ../build.log 2>&1 || { tail -40 ../build.log; exit 1; }
	@ls build/deb/*.deb
