"""meleelab analysis: estimates, matrices, balance metrics, plots, reports and the CLI."""
