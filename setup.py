"""Compiled part of nrsack: the analyzer's libpcap reader and scoreboard (metadata: pyproject.toml)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "nrsack.analyzer._reader",
            sources=["analyzer/_reader.c", "analyzer/_scoreboard.c", "analyzer/_levels.c"],
            depends=["analyzer/_analyzer.h"],
            libraries=["pcap"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wno-missing-field-initializers"],
        )
    ]
)
