"""t2t-lite's benchmark suite, driven by `scripts/bench.py`.

Modules, in the order a reader needs them:

- `sizes`: the dimensions every contender shares (flags and presets);
- `flops`: the analytic FLOP count of one training step;
- `data`, `audio`: the batches and the synthetic speech all contenders see;
- `runner`, `worker`: one subprocess per contender, driven over a pipe, so
  that repetitions alternate between contenders and each one's peak memory
  is its own;
- `t2t_side`, `torch_side`, `keras_side`, `matmul`, `featurize`: the
  contenders themselves (heavy imports happen only inside a worker);
- `sections`: the four comparisons; `report`: tables, ratios and goals;
- `profile`: per-op timing of t2t-lite's training steps, cached decoding
  and input pipeline (`--profile`), to show what dominates the time.
"""
