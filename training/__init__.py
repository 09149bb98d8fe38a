"""JAX training engine: configs, jitted loops, run store and tracking writers.

Importing this package does not import JAX; `training.regression` and
`training.mnist` do.
"""
