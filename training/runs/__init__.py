"""A run around the loop: start, resume, checkpoints, populations, the warm worker."""
