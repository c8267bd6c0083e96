"""The command line: the composition root, the one package that may import every other (see docs/architecture.md)."""
