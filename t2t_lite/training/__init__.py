"""Training: the model and optimizer built for a run, and the loop that trains them.

The distributed loop survives a kill; its schedules, metrics and checkpoints
are here too.
"""
