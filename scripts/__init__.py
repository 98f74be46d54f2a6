"""The commands: run.sh, serve.sh and test.sh here; the test databases and
servers in dev/, CI's stages in ci/, the benchmarks and long runs in bench/
(Python ones run as modules from the repository's root: `.venv/bin/python
-m scripts.bench.scale`), and harness/, what the tools and the tests share."""
