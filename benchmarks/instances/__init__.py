"""Benchmark-only instances and checks: batches for batch planning, Phan, Ranganathan & Sion 2005's synthetic experiments, and an
independent check of a batch schedule. The benchmarks and their tests import them; the product does not."""
