"""What the page starts and stops: training runs, warm workers, TensorBoard."""
