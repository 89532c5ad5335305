"""CTC prefix scores for joint CTC/attention beam search.

Hybrid CTC/attention decoding (Watanabe et al. 2017, "Hybrid CTC/Attention
Architecture for End-to-End Speech Recognition"; ESPnet's `CTCPrefixScore`)
ranks each beam-search extension `g + c` by

    (1 - ctc_weight) * log p_attention(g + c) + ctc_weight * log p_ctc(g + c, ...)

where `p_ctc(h, ...)` is the probability that the CTC posterior of the
encoder emits a label sequence *starting with* `h` (the prefix probability),
and for EOS the probability of exactly `g`. CTC's alignment is monotonic and
covers every frame, so a hypothesis that skips or repeats words, or talks
over silence, has a low CTC prefix score however fluent the decoder finds it.

For a prefix `g` the state is, per frame `t`, the log probability that the
first `t + 1` frames emit `g` ending in a non-blank (`r_n[t]`) or in a blank
(`r_b[t]`). Extending `g` by `c` (Graves 2008, ch. 7; Watanabe et al. alg. 2):

    phi[t]   = r_b[t]                       if c == last(g)
               logaddexp(r_n[t], r_b[t])    otherwise
    r_n'[t]  = x_c[t] + logaddexp(r_n'[t-1], phi[t-1])
    r_b'[t]  = x_blank[t] + logaddexp(r_n'[t-1], r_b'[t-1])
    psi(g+c) = logsumexp_t (phi[t-1] + x_c[t])        (the prefix score)

with `phi[-1] = 0` for the empty prefix (probability 1 before the first frame)
and `-inf` otherwise. ESPnet runs the two recursions as a loop over frames at
every output step. Both are linear recurrences in probability space, so they
have a closed form with cumulative sums instead (`A = cumsum(x_c)`):

    r_n'[t] = A[t] + logcumsumexp_{s <= t}(phi[s-1] - A[s-1])

and likewise for `r_b'` with the blank's cumulative sum. Each output step is
then a handful of vectorized ops over `[batch, beam, candidates, frames]`,
with static shapes (XLA/TPU), instead of a sequential loop over frames.

Only `candidates` tokens per beam are scored (ESPnet's partial scoring: the
attention decoder's best few), so the cost does not grow with the vocabulary.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.decoding.search.scorer import Scorer, gather_candidates

# ESPnet's "logzero": finite, so that differences and sums stay finite (no
# inf - inf = NaN), and far below any real log probability.
LOG_ZERO = -1.0e10


def _shift_right(x: tf.Tensor, first, by: int = 1) -> tf.Tensor:
    """`x[..., t - by]` along the last axis, with `first` at `t < by`."""
    # Slices without an ellipsis and a pad: ops TFLite's converter lowers.
    rank = x.shape.rank
    kept = tf.slice(x, [0] * rank, tf.concat([tf.shape(x)[:-1], [tf.shape(x)[-1] - by]], 0))
    return tf.pad(kept, [[0, 0]] * (rank - 1) + [[by, 0]], constant_values=first)


def _log_cumsum_exp(x: tf.Tensor) -> tf.Tensor:
    """`log(cumsum(exp(x)))` along the last axis, stably.

    With a static length it is a doubling scan (Hillis and Steele: after
    step k each position holds the log-sum of its last 2**k inputs), which
    needs only element-wise ops: TFLite has no cumulative-logsumexp op, and
    the on-device export's frames are static. Otherwise TF's own op.
    """
    length = x.shape[-1]
    if length is None:
        return tf.math.cumulative_logsumexp(x, axis=-1)
    shift = 1
    while shift < length:
        x = _log_add_exp(x, _shift_right(x, LOG_ZERO, shift))
        shift *= 2
    return x


def _log_add_exp(a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    """`log(exp(a) + exp(b))` without overflow (in element-wise builtins)."""
    larger = tf.maximum(a, b)
    return larger + tf.math.log(1.0 + tf.exp(-tf.abs(a - b)))


def _linear_recurrence(log_x: tf.Tensor, log_input: tf.Tensor) -> tf.Tensor:
    """`y[t] = log_x[t] + logaddexp(y[t-1], log_input[t])`, `y[-1] = -inf`, in closed form.

    Along the last axis: `y[t] = A[t] + logcumsumexp_s(log_input[s] - A[s-1])`
    with `A` the inclusive cumulative sum of `log_x` (`A[-1] = 0`).
    """
    inclusive = tf.cumsum(log_x, axis=-1)
    exclusive = inclusive - log_x
    return inclusive + _log_cumsum_exp(log_input - exclusive)


class CtcPrefixScorer(Scorer):
    """Scores one-token extensions of beam hypotheses with a CTC posterior.

    A partial scorer: a candidate's step score is its prefix score less its
    parent's, so that the sum along a hypothesis is its prefix score.

    Args:
        log_probs: float32 `[batch, frames, vocab]` per-frame log posteriors
            (log-softmax of the CTC head), frames right-padded.
        lengths: int `[batch]`, the real frames of each item (0 allowed).
        blank_id: the CTC blank (t2t-lite's PAD_ID, 0).
        eos_id: the end-of-sequence id; its score is the probability of the
            whole prefix (every frame consumed).

    Example:
    ```python
    scorer = CtcPrefixScorer(log_probs, lengths)
    state = scorer.initial_state(beam_size=4)
    psi, candidate_state = scorer.extend(state, candidate_ids, step)
    # psi - state["score"][..., None] is each candidate's CTC score increment
    ```
    """

    partial = True

    def __init__(self, log_probs, lengths, blank_id: int = 0, eos_id: int = 1):
        log_probs = tf.cast(log_probs, tf.float32)
        frames = tf.shape(log_probs)[1]
        self.lengths = tf.cast(lengths, tf.int32)
        self.frame_mask = tf.sequence_mask(self.lengths, frames)  # [batch, frames]
        # Padded frames contribute log 1 = 0: the cumulative sums stay bounded
        # there, and nothing before an item's last real frame depends on them.
        self.log_probs = tf.where(tf.expand_dims(self.frame_mask, 2), log_probs, 0.0)
        self.blank_id = blank_id
        self.eos_id = eos_id

    def initial_state(self, beam_size: int) -> dict:
        """The empty prefix: every real frame so far is blank.

        Returns:
            `{"r": [batch, beam, 2, frames], "score": [batch, beam],
            "last": [batch, beam]}`: the forward variables (non-blank, blank),
            the prefix score (log 1 = 0) and the last token (-1: none).
        """
        blank_path = tf.cumsum(tf.gather(self.log_probs, self.blank_id, axis=2), axis=1)  # [b, t]
        r = tf.stack([tf.fill(tf.shape(blank_path), LOG_ZERO), blank_path], axis=1)
        r = tf.tile(tf.expand_dims(r, 1), [1, beam_size, 1, 1])
        batch = tf.shape(blank_path)[0]
        return {
            "r": r,
            "score": tf.zeros([batch, beam_size], tf.float32),
            "last": tf.fill([batch, beam_size], -1),
        }

    def score(self, state, alive_seq, step, candidates=None):
        prefix_scores, forward = self.extend(state, candidates, step)
        new_state = {"r": forward, "score": prefix_scores, "last": candidates}
        return prefix_scores - state["score"][:, :, None], new_state

    def select(self, state, new_state, parents, columns, tokens):
        return {k: gather_candidates(v, parents, columns) for k, v in new_state.items()}

    def extend(self, state: dict, candidates: tf.Tensor, step) -> tuple[tf.Tensor, tf.Tensor]:
        """Prefix scores of each hypothesis extended by each candidate token.

        Args:
            state: from `initial_state` or a previous extension, for the
                `[batch, beam]` hypotheses (all of length `step`).
            candidates: int32 `[batch, beam, k]` token ids.
            step: scalar int, the length of the hypotheses (0: empty prefix).

        Returns:
            `(psi [batch, beam, k], r [batch, beam, k, 2, frames])`: the log
            prefix score of each extension (EOS: of the finished sequence;
            blank: LOG_ZERO) and its forward variables.
        """
        candidates = tf.cast(candidates, tf.int32)
        batch, beam, k = tf.unstack(tf.shape(candidates))
        # x_c[t] for every candidate: [batch, beam, k, frames].
        flat = tf.reshape(candidates, [batch, beam * k])
        x_c = tf.gather(self.log_probs, flat, axis=2, batch_dims=1)  # [batch, frames, beam*k]
        x_c = tf.reshape(tf.transpose(x_c, [0, 2, 1]), [batch, beam, k, -1])
        x_blank = tf.gather(self.log_probs, self.blank_id, axis=2)  # [batch, frames]
        x_blank = tf.expand_dims(tf.expand_dims(x_blank, 1), 1)  # [batch, 1, 1, frames]

        r_n, r_b = tf.unstack(state["r"], axis=2)  # [batch, beam, frames] each
        r_sum = _log_add_exp(r_n, r_b)
        # A repeated label needs a blank between its two emissions.
        repeat = tf.expand_dims(tf.equal(candidates, tf.expand_dims(state["last"], 2)), 3)
        phi = tf.where(repeat, tf.expand_dims(r_b, 2), tf.expand_dims(r_sum, 2))  # [b, beam, k, t]
        phi_before = _shift_right(phi, tf.where(tf.equal(step, 0), 0.0, LOG_ZERO))

        new_n = _linear_recurrence(x_c, phi_before)
        new_b = _linear_recurrence(x_blank + tf.zeros_like(x_c), _shift_right(new_n, LOG_ZERO))

        mask = tf.expand_dims(tf.expand_dims(self.frame_mask, 1), 1)  # [batch, 1, 1, frames]
        psi = tf.reduce_logsumexp(tf.where(mask, phi_before + x_c, LOG_ZERO), axis=-1)
        # EOS: the prefix itself, every real frame consumed.
        last_frame = tf.maximum(self.lengths - 1, 0)
        whole = tf.gather(r_sum, last_frame, axis=2, batch_dims=1)  # [batch, beam]
        whole = tf.where(tf.expand_dims(self.lengths > 0, 1), whole, 0.0)  # no frames: "" only
        psi = tf.where(tf.equal(candidates, self.eos_id), tf.expand_dims(whole, 2), psi)
        psi = tf.where(tf.equal(candidates, self.blank_id), LOG_ZERO, psi)
        return psi, tf.stack([new_n, new_b], axis=3)
