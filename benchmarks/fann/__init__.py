"""FANN's own Cascade2, driven from Python for side-by-side comparisons."""
