"""t2t-lite's benchmarks against its peers, side by side in one run.

    pip install -e ".[bench]"
    python scripts/bench.py                     # default sizes: 6-8 min on 2 cores
    python scripts/bench.py --size=smallest     # every code path, ~2 min (start-ups)
    python scripts/bench.py --sections=decoding --decode_lengths=32,64

Four comparisons, each contender in its own subprocess, warmed up, then
alternated repetition by repetition (A B C A B C ...):

1. training throughput and GFLOP/s of one optimizer step: t2t-lite's
   transformer (text and speech, tf.function and XLA), PyTorch
   nn.Transformer (default and passive OpenMP waiting), plain Keras 3,
   keras-hub, and TF's float32 matmul limit;
2. decoding tokens/s: cached vs uncached beam search vs keras-hub's
   BeamSampler, at several target lengths;
3. input pipeline: audio seconds featurized per second, t2t-lite's training
   pipeline vs librosa, on 1 and 2 cores;
4. peak resident memory of each training contender.

--profile adds a per-op profile of t2t-lite's training steps, cached
decoding and input pipeline: what dominates the time.

Prints Markdown tables (median, min, max, ratio to t2t-lite, the goals of
issue #7) and writes every number to --output (bench_results.json). The
modules live in scripts/bench/; see scripts/bench/__init__.py.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
