"""A run's metrics.jsonl read fast: bounded columns, a columnar cache, its overview and CSV."""
