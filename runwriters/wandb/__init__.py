"""The Weights & Biases backend: mode, run, rows, history and media."""
