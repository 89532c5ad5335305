"""The training loop's controller: when it trains, logs, saves and evaluates.

Model Garden's split (`orbit.Controller`): the trainer knows how to run
steps, save and evaluate; `LoopSchedule.run` decides when. Each action runs
every so many steps, counted from the step it last ran (T2T's
`log_step_count_steps`, `save_checkpoints_steps` and the evaluation
interval); a loop call runs up to `iterations_per_loop` steps but stops at
the next action, so every action runs at its step; the end saves and
evaluates unless that step just did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass
class Every:
    """An action due every `interval` steps, counted from `last`, the step it last ran.

    Example:
    >>> save = Every(interval=100, last=0)
    >>> save.due(99), save.due(100), save.next_step
    (False, True, 100)
    """

    interval: int
    last: int

    @property
    def next_step(self) -> int:
        return self.last + self.interval

    def due(self, step: int) -> bool:
        return step - self.last >= self.interval

    def ran(self, step: int) -> None:
        """Records that the action ran at `step`."""
        self.last = step


@dataclasses.dataclass
class LoopSchedule:
    """The log, save and evaluate actions of one `Trainer.train` call.

    Args:
        train_steps: the step training ends at (also logs there).
        iterations_per_loop: the most steps one loop call runs.
        log: when a progress line is logged.
        save: when a checkpoint is saved.
        evaluate: when the model is evaluated; None: never during training.

    Example:
    >>> schedule = LoopSchedule.starting_at(
    ...     0, train_steps=1000, iterations_per_loop=100, log_every=100,
    ...     save_every=30, evaluate_every=0)
    >>> schedule.loop_steps(0)  # the save at step 30 cuts the call short
    30
    """

    train_steps: int
    iterations_per_loop: int
    log: Every
    save: Every
    evaluate: Every | None

    @classmethod
    def starting_at(
        cls,
        step: int,
        *,
        train_steps: int,
        iterations_per_loop: int,
        log_every: int,
        save_every: int,
        evaluate_every: int,
    ) -> LoopSchedule:
        """The schedule of a run at `step` (0, or a resumed checkpoint's step).

        `evaluate_every` 0 means no evaluation during training.
        """
        return cls(
            train_steps=train_steps,
            iterations_per_loop=iterations_per_loop,
            log=Every(log_every, step),
            save=Every(save_every, step),
            evaluate=Every(evaluate_every, step) if evaluate_every else None,
        )

    def loop_steps(self, step: int) -> int:
        """How many steps the next loop call runs from `step` (at least one)."""
        events = [self.train_steps, self.save.next_step, self.log.next_step]
        if self.evaluate is not None:
            events.append(self.evaluate.next_step)
        return max(1, min(self.iterations_per_loop, min(events) - step))

    def log_due(self, step: int) -> bool:
        return self.log.due(step) or step >= self.train_steps

    def evaluate_due(self, step: int) -> bool:
        return self.evaluate is not None and self.evaluate.due(step)

    def run(
        self,
        step: int,
        train: Callable[[int], int],
        log: Callable[[], None],
        save: Callable[[], None],
        evaluate: Callable[[], dict],
    ) -> dict:
        """Drives a run from `step` to `train_steps`.

        Args:
            step: the step the run starts at.
            train: runs that many steps; returns the step reached.
            log / save / evaluate: the actions, run when due.

        Returns:
            The last evaluation's results ({} when none ran).
        """
        results = {}
        while step < self.train_steps:
            step = train(self.loop_steps(step))
            if self.log_due(step):
                log()
                self.log.ran(step)
            if self.save.due(step):
                save()
                self.save.ran(step)
            if self.evaluate_due(step):
                results = evaluate()
                self.evaluate.ran(step)
        if self.save.last != step:
            save()
        if self.evaluate is not None and self.evaluate.last != step:
            results = evaluate()
        return results
