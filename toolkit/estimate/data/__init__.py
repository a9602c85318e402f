"""Data of the estimate: priors per chip, features of the published models, the fitted parameters."""
