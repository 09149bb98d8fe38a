"""Differential W&B conformance: each probe script runs with real `wandb` (offline) and with `import jaxdash as wandb`.

probes/*.py: small W&B scripts, each with the line `import wandb` (optional header lines `# env: K=V ...` and
`# expect: {json}`, see running.py). running.py runs a probe as a real subprocess for an implementation,
observe.py reads what W&B stored (its offline run through `wandb leet inspect --json`), store_reader.py our
run folder (through runstore), its W&B copy and trackio's SQLite, reference.py caches W&B's outcome, and
compare.py turns two observations into a list of differences.
"""
