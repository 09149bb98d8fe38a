"""JAX training engine: tasks with typed configs, one chunked loop, run store and tracking writers.

Importing this package does not import JAX; `training.engine.loop` and the task modules do.
"""
