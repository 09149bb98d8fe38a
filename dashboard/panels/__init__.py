"""What the pages draw: one run's or a population's panels, compare, the in-place chart."""
