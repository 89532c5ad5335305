"""LoopSchedule: each loop call stops at the next log, save or evaluation,
each action runs at its step, counted from the step it last ran, and the
end saves and evaluates unless that step just did."""

from t2t_lite.training.loop_schedule import LoopSchedule


def _run(start, train_steps, iterations_per_loop, log_every, save_every, evaluate_every):
    """(loop call lengths, {step: actions}) of a run the schedule drives."""
    schedule = LoopSchedule.starting_at(
        start,
        train_steps=train_steps,
        iterations_per_loop=iterations_per_loop,
        log_every=log_every,
        save_every=save_every,
        evaluate_every=evaluate_every,
    )
    step, lengths, actions = [start], [], {}

    def train(steps):
        lengths.append(steps)
        step[0] += steps
        return step[0]

    def action(name):
        def record():
            actions.setdefault(step[0], []).append(name)
            return {"evaluated_at": step[0]} if name == "evaluate" else None

        return record

    results = schedule.run(
        start, train, log=action("log"), save=action("save"), evaluate=action("evaluate")
    )
    return lengths, actions, results


def test_calls_stop_at_each_action_and_the_end_saves_and_evaluates():
    lengths, actions, results = _run(0, 25, 10, log_every=10, save_every=15, evaluate_every=20)
    assert lengths == [10, 5, 5, 5]
    assert actions == {
        10: ["log"],
        15: ["save"],
        20: ["log", "evaluate"],
        25: ["log", "save", "evaluate"],  # the end's save and evaluation
    }
    assert results == {"evaluated_at": 25}


def test_an_action_just_run_at_the_end_is_not_run_again():
    _, actions, _ = _run(0, 20, 10, log_every=10, save_every=10, evaluate_every=20)
    assert actions == {10: ["log", "save"], 20: ["log", "save", "evaluate"]}


def test_a_resumed_run_counts_from_its_step_and_never_evaluates_at_zero():
    lengths, actions, results = _run(12, 30, 100, log_every=100, save_every=10, evaluate_every=0)
    assert lengths == [10, 8]
    assert actions == {22: ["save"], 30: ["log", "save"]}
    assert results == {}
