"""The compiled parts of nrsack, built at install (metadata: pyproject.toml).

One backend for every C part that ships in the Python package: setuptools extensions. The
simulator's event loop is a plain shared library loaded with ctypes (no Python module init), so it
builds as an extension too and lands beside fast.py with the ABI-tagged name.
"""

from setuptools import Extension, setup

COMPILE_ARGS = ["-O2", "-std=c11", "-Wall", "-Wno-missing-field-initializers"]

setup(
    ext_modules=[
        Extension(
            "nrsack.analyzer._native",
            sources=["analyzer/_module.c", "analyzer/read/_reader.c", "analyzer/state/_scoreboard.c",
                     "analyzer/state/_levels.c", "analyzer/state/_fin_closes.c", "analyzer/state/_flows.c",
                     "analyzer/state/_stores.c",
                     "analyzer/rules/_ledger.c",
                     "analyzer/views/_layout.c",
                     "core/serial.c", "core/iset.c", "core/scoreboard.c", "core/sndbuf.c"],
            depends=["analyzer/_analyzer.h", "analyzer/nrsack_core_alloc.h", "core/nrsack_core.h"],
            include_dirs=["analyzer", "core"],
            libraries=["pcap"],
            extra_compile_args=COMPILE_ARGS,
        ),
        Extension(
            "nrsack.generator.sim._fastsim",
            sources=["generator/sim/_fastsim.c"],
            extra_compile_args=COMPILE_ARGS,
        ),
        Extension(
            "nrsack.lab._usrsctp_lab",
            sources=["lab/_usrsctp_lab.c", "lab/_usrsctp_udp.c"],
            depends=["lab/_usrsctp_send.h"],
            libraries=["usrsctp", "pthread", "m"],
            extra_compile_args=COMPILE_ARGS,
        ),
    ]
)
