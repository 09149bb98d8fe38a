"""What the user fills in: widgets, population and PBT settings."""
