# The two commands of README.md: `make demo` and `make test`. Both set up first.
SAMPLE ?= sample-pcaps/sctp-nrsack-fig4.pcap
SACK_SAMPLE ?= sample-pcaps/sctp-sack-fig2.pcap
SNDBUF ?= 8000
PYTEST_ARGS ?=
# What needs more than Python and the compiled parts (see pyproject.toml's markers).
FAST = not tshark and not root and not browser and not chroot and not slow

.PHONY: setup build demo test test-fast plugin

setup:
	bash scripts/setup.sh

# Rebuild the compiled parts after a C edit (an editable install does not); the tests refuse stale ones.
build:
	python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps -e .

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
	python3 -m pytest -q $(PYTEST_ARGS)

# The inner loop: no set-up, no tshark, root, browser or chroot; under a minute.
test-fast:
	python3 -m pytest -q -n 2 -m "$(FAST)" $(PYTEST_ARGS)
