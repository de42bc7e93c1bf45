# The two commands of README.md: `make demo` and `make test`. Both set up first.
SAMPLE ?= sample-pcaps/sctp-nrsack-fig4.pcap
SACK_SAMPLE ?= sample-pcaps/sctp-sack-fig2.pcap
SNDBUF ?= 8000
PYTEST_ARGS ?=
# What needs more than Python and the compiled parts (see pyproject.toml's markers).
FAST = not tshark and not root and not browser and not chroot and not slow and not setup
# scripts/setup.sh installs into a virtual environment of Debian's python3 under NRSACK_PREFIX (PEP 668:
# nothing goes into the system's Python). Its bin/ comes first on PATH here, so python3, pytest and
# nrsack below are that environment's (before set-up, as in test-fast on a fresh clone, the system's).
export NRSACK_PREFIX ?= /opt/nrsack
export PATH := $(NRSACK_PREFIX)/venv/bin:$(PATH)

.PHONY: setup build demo test test-fast plugin

setup:
	bash scripts/setup.sh

# Rebuild the compiled parts after a C edit (an editable install does not); the tests refuse stale ones.
build:
	python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps --no-build-isolation -e .

plugin:
	$(MAKE) -C dissector build

demo: setup plugin
	@echo "== $(SAMPLE) decoded by the nrsack Wireshark plugin (B = $(SNDBUF) bytes)"
	scripts/tshark-nrsack.sh -r $(SAMPLE) -o sctp.relative_tsns:FALSE -o nrsack.sndbuf:$(SNDBUF) \
	  -T fields -E header=y -e frame.number -e frame.time_relative -e _ws.col.Info \
	  -e nrsack.rtxq.sack_bytes -e nrsack.rtxq.bytes -e nrsack.freed_bytes -e nrsack.blocked
	@echo "== RtxQ, send-buffer blocking and p/q"
	nrsack analyze $(SAMPLE) --sndbuf $(SNDBUF)
	@echo "== NR-SACK run vs SACK run of the same figure"
	nrsack compare $(SAMPLE) $(SACK_SAMPLE) --sndbuf $(SNDBUF)
	@echo "== conformance"
	nrsack check $(SAMPLE)

test: setup
	python3 -m pytest -q -n 2 $(PYTEST_ARGS)
	$(MAKE) test-wireshark-versions

# The plugin suites again against Wireshark 4.4 (Debian 13 trixie) and 4.6 (Debian testing forky), in
# chroots scripts/wireshark-chroot.sh makes once (both at a time) and caches under /var/cache/nrsack.
# Without root or debootstrap pytest skips them and says why; a broken mirror fails loudly.
# The Lua plugin's expected-file checks are implied there: Lua output == golden file (parity) ==
# C output (samples), and the C output is checked against the expected files.
WIRESHARK_SUITES ?= trixie forky
PLUGIN_VERSION_TESTS ?= tests/test_dissector_versions.py tests/test_dissector_samples.py tests/test_dissector_tap.py \
  tests/test_dissector_fuzz.py tests/test_lua_parity.py tests/test_dissector_profile.py tests/test_fields_table.py \
  tests/test_plugin_sndbuf.py
.PHONY: test-wireshark-versions
test-wireshark-versions:
	@if [ "$$(id -u)" = 0 ] && command -v debootstrap >/dev/null; then \
	  for suite in $(WIRESHARK_SUITES); do scripts/wireshark-chroot.sh ensure $$suite >/dev/null & done; wait; fi
	@status=0; for suite in $(WIRESHARK_SUITES); do \
	  echo "== the plugin suites against Debian $$suite's Wireshark"; \
	  NRSACK_WIRESHARK=$$suite python3 -m pytest -q -n 2 $(PYTEST_ARGS) $(PLUGIN_VERSION_TESTS) || status=1; \
	done; exit $$status

# The README's `make demo` in a fresh Debian 12 (bookworm) chroot with Debian's own python3, alone
# (`make test` runs it too, first: tests/test_setup_stock_debian.py).
.PHONY: test-stock-debian
test-stock-debian: setup
	python3 -m pytest -q $(PYTEST_ARGS) tests/test_setup_stock_debian.py

# The inner loop: no set-up, no tshark, root, browser or chroot; under a minute.
test-fast:
	python3 -m pytest -q -n 2 -m "$(FAST)" $(PYTEST_ARGS)

# Wireshark's own dissector checks (check_dissector.py's battery) on the C plugin and the core, from a
# copy of Wireshark's tools/ folder: `make wireshark-checks WIRESHARK_TOOLS=DIR` (scripts/wireshark-checks.sh).
.PHONY: wireshark-checks
wireshark-checks:
	@test -n "$(WIRESHARK_TOOLS)" || { echo "usage: make wireshark-checks WIRESHARK_TOOLS=DIR (a copy of Wireshark's tools/)"; exit 2; }
	scripts/wireshark-checks.sh "$(WIRESHARK_TOOLS)"
