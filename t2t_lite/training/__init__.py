"""Training: the model and optimizer built for a run, the distributed loop that
survives a kill, its schedules, metrics and checkpoints."""
