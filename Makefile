# The two commands of README.md: `make demo` and `make test`. Both set up first.
SAMPLE ?= sample-pcaps/sctp-nrsack-fig4.pcap
PYTEST_ARGS ?=

.PHONY: setup demo test

setup:
	bash scripts/setup.sh

demo: setup
	tshark -n -r $(SAMPLE) -o sctp.relative_tsns:FALSE 2>/dev/null

test: setup
	python3 -m pytest -q $(PYTEST_ARGS)
