"""Differential W&B conformance: each probe script runs with real `wandb` (offline) and with `import jaxdash as wandb`.

probes/*.py: small W&B scripts, each with the line `import wandb` (optional header lines `# env: K=V ...` and
`# expect: {json}`, see running.py). running.py runs a probe as a real subprocess for an implementation,
observe.py reads what it stored (W&B's offline run through `wandb leet inspect --json`, our run folder through
runstore, trackio's SQLite), compare.py turns two observations into a list of differences.
"""
