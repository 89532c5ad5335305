"""LoopSchedule: each loop call stops at the next log, save or evaluation, and
each action runs at its step, counted from the step it last ran."""

from t2t_lite.training.loop_schedule import LoopSchedule


def _run(start, train_steps, iterations_per_loop, log_every, save_every, evaluate_every):
    """(loop call lengths, {step: actions}) of a run, driven as Trainer.train drives it."""
    schedule = LoopSchedule.starting_at(
        start,
        train_steps=train_steps,
        iterations_per_loop=iterations_per_loop,
        log_every=log_every,
        save_every=save_every,
        evaluate_every=evaluate_every,
    )
    step, lengths, actions = start, [], {}
    while step < train_steps:
        length = schedule.loop_steps(step)
        lengths.append(length)
        step += length
        if schedule.log_due(step):
            actions.setdefault(step, []).append("log")
            schedule.log.ran(step)
        if schedule.save.due(step):
            actions.setdefault(step, []).append("save")
            schedule.save.ran(step)
        if schedule.evaluate_due(step):
            actions.setdefault(step, []).append("evaluate")
            schedule.evaluate.ran(step)
    if schedule.save.last != step:
        actions.setdefault("end", []).append("save")
    if schedule.evaluate is not None and schedule.evaluate.last != step:
        actions.setdefault("end", []).append("evaluate")
    return lengths, actions


def test_calls_stop_at_each_action_and_the_end_saves_and_evaluates():
    lengths, actions = _run(0, 25, 10, log_every=10, save_every=15, evaluate_every=20)
    assert lengths == [10, 5, 5, 5]
    assert actions == {
        10: ["log"],
        15: ["save"],
        20: ["log", "evaluate"],
        25: ["log"],
        "end": ["save", "evaluate"],
    }


def test_a_resumed_run_counts_from_its_step_and_never_evaluates_at_zero():
    lengths, actions = _run(12, 30, 100, log_every=100, save_every=10, evaluate_every=0)
    assert lengths == [10, 8]
    assert actions == {22: ["save"], 30: ["log"], "end": ["save"]}
