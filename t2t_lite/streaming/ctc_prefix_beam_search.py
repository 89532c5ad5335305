"""CTC prefix beam search in TensorFlow ops, at fixed shapes, its beams as state.

    search = CtcPrefixBeamSearch(beam_size=4, max_labels=516)
    state = search.initial_state()
    state = search.advance(log_probs, frames, state)   # [1, frames, vocab], blank = 0
    search.best(state)                                 # [1, labels]: the partial's ids
    search.nbest(state)                                # [(ids, log probability)], best first
    search.trailing_blank_frames(state)                # frames since the best path's last label

The classic prefix search (Hannun et al. 2014; WeNet's streaming first
pass), the partial of every streaming driver: the state machine
(`graph.StreamingGraph`) runs it on each chunk's new encoder frames, so the
SavedModel's `stream_step`, the on-device `stream_step.tflite` (its ops are
TFLite builtins) and the Python recognizer give the same partials. Each
beam is a row of `max_labels` ids, its length (-1: no beam), and two log
probabilities: the frames so far ending in blank, and ending in its last
token. A frame's candidates are each beam staying (blank, or a repeat of
its last token, which collapses) and each beam extended by each of the
frame's `beam_size` likeliest tokens other than blank (a repeat of its last
token only from its blank path); an extension that spells an existing beam
is merged into it, and the `beam_size` best candidates are kept. A beam's
`logaddexp(blank, token)` is the CTC probability of its labelling over the
frames so far, so at the end it is the full CTC score attention rescoring
combines with. The state also keeps the frame of the best path's last
label, so `trailing_blank_frames` reads only the new frames.
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.reserved_ids import PAD_ID, is_label

BLANK_ID = PAD_ID  # the CTC head's blank (model.ctc_log_probs)
# The state tensors, in signature order.
STATE = ("prefixes", "prefix_lengths", "prefix_blank", "prefix_token", "frames_searched",
         "last_label")  # fmt: skip
_NEG_INF = float("-inf")


class CtcPrefixBeamSearch:
    """Incremental CTC prefix beam search (TF ops, one utterance).

    Args:
        beam_size: prefixes kept after each frame, and tokens tried per frame.
        max_labels: the longest prefix (the utterance's most encoder frames:
            a CTC path has no more labels than frames).
    """

    def __init__(self, beam_size: int, max_labels: int):
        self.beam_size, self.max_labels = beam_size, max_labels

    def state_spec(self) -> dict[str, tf.TensorSpec]:
        beams = self.beam_size
        shapes = {
            "prefixes": ([beams, self.max_labels], tf.int32),
            "prefix_lengths": ([beams], tf.int32),  # -1: no beam
            "prefix_blank": ([beams], tf.float32),
            "prefix_token": ([beams], tf.float32),
            "frames_searched": ([], tf.int32),
            "last_label": ([], tf.int32),  # the best path's last label's frame, -1 none
        }
        return {name: tf.TensorSpec(*shapes[name], name=name) for name in STATE}

    def initial_state(self) -> dict[str, tf.Tensor]:
        """One beam, the empty prefix, with probability 1 of ending in blank."""
        beams = self.beam_size
        first = tf.one_hot(0, beams, on_value=0.0, off_value=_NEG_INF)
        return {
            "prefixes": tf.zeros([beams, self.max_labels], tf.int32),
            "prefix_lengths": tf.one_hot(0, beams, on_value=0, off_value=-1, dtype=tf.int32),
            "prefix_blank": first,
            "prefix_token": tf.fill([beams], _NEG_INF),
            "frames_searched": tf.constant(0),
            "last_label": tf.constant(-1),
        }

    def advance(self, log_probs, frames, state: dict) -> dict:
        """The state after `log_probs` `[1, >= frames, vocab]`'s first `frames` frames."""
        frames = tf.cast(frames, tf.int32)
        best = tf.argmax(log_probs[0, :frames], axis=-1, output_type=tf.int32)
        labels = tf.where(is_label(best), tf.range(frames), -1)
        last = tf.reduce_max(tf.concat([[-1], labels], axis=0))

        def frame_step(t, beams):
            return t + 1, self._step(log_probs[0, t], beams)

        beams = {name: state[name] for name in STATE[:4]}
        _, beams = tf.while_loop(lambda t, _: t < frames, frame_step, (0, beams))
        searched = state["frames_searched"]
        return {
            **beams,
            "frames_searched": searched + frames,
            "last_label": tf.where(last >= 0, searched + last, state["last_label"]),
        }

    def trailing_blank_frames(self, state: dict) -> tf.Tensor:
        """Frames after the best path's last label, all of them before one."""
        return state["frames_searched"] - 1 - state["last_label"]

    def best(self, state: dict) -> tf.Tensor:
        """The best prefix's ids, `[1, labels]`."""
        scores = tf.reduce_logsumexp(
            tf.stack([state["prefix_blank"], state["prefix_token"]]), axis=0
        )
        index = tf.argmax(scores, output_type=tf.int32)
        length = tf.maximum(state["prefix_lengths"][index], 0)
        return state["prefixes"][index : index + 1, :length]

    def nbest(self, state: dict) -> list[tuple[list[int], float]]:
        """Every kept prefix and its CTC log probability, best first (eager)."""
        lengths = state["prefix_lengths"].numpy()
        scores = tf.reduce_logsumexp(
            tf.stack([state["prefix_blank"], state["prefix_token"]]), axis=0
        ).numpy()
        prefixes = state["prefixes"].numpy()
        kept = [
            (prefixes[i, :n].tolist(), float(scores[i])) for i, n in enumerate(lengths) if n >= 0
        ]
        return sorted(kept, key=lambda item: -item[1])

    def _step(self, frame, beams: dict) -> dict:
        """One frame `[vocab]` of log posteriors."""
        size, max_labels = self.beam_size, self.max_labels
        prefixes, lengths = beams["prefixes"], beams["prefix_lengths"]
        blank, token = beams["prefix_blank"], beams["prefix_token"]
        valid = lengths >= 0
        total = _logaddexp(blank, token)
        last = tf.gather(prefixes, tf.maximum(lengths - 1, 0), batch_dims=1)  # [beams]
        last = tf.where(lengths > 0, last, -1)

        # Staying: blank after anything; the last token again, collapsed.
        stay_blank = total + frame[BLANK_ID]
        repeat = token + tf.gather(frame, tf.maximum(last, 0))
        stay_token = tf.where(lengths > 0, repeat, _NEG_INF)
        # Extending beam p by token k (the frame's likeliest but blank): a
        # repeat of p's last token needs a blank between (p's blank path).
        tokens = min(size, frame.shape[-1])  # (a vocabulary smaller than the beam: all)
        top = tf.math.top_k(frame, tokens).indices  # [tokens]
        source = tf.where(top[None, :] == last[:, None], blank[:, None], total[:, None])
        extend = source + tf.gather(frame, top)[None, :]  # [beams, tokens]
        room = valid & (lengths < max_labels)
        extend = tf.where((top[None, :] != BLANK_ID) & room[:, None], extend, _NEG_INF)

        # An extension that spells beam q (q = p + [k]) is merged into q.
        positions = tf.range(max_labels)
        within = positions[None, :] < lengths[:, None]  # [p, labels]: p's labels
        same = tf.reduce_all(
            (prefixes[None, :, :] == prefixes[:, None, :]) | ~within[:, None, :], axis=-1
        )  # [p, q]: q's first len(p) labels are p's
        child = same & (lengths[None, :] == lengths[:, None] + 1) & valid[:, None]
        matches = child[:, None, :] & (top[None, :, None] == last[None, None, :])  # [p, k, q]
        merged = tf.where(matches, extend[:, :, None], _NEG_INF)
        stay_token = _logaddexp(stay_token, tf.reduce_logsumexp(merged, axis=[0, 1]))
        extend = tf.where(tf.reduce_any(matches, axis=-1), _NEG_INF, extend)

        # The candidates: each beam staying, then each extension; keep the best.
        stay_blank = tf.where(valid, stay_blank, _NEG_INF)
        stay_token = tf.where(valid, stay_token, _NEG_INF)
        flat_extend = tf.reshape(extend, [-1])
        scores = tf.concat([_logaddexp(stay_blank, stay_token), flat_extend], axis=0)
        kept = tf.math.top_k(scores, size).indices  # [beams]
        is_stay = kept < size
        parent = tf.where(is_stay, kept, (kept - size) // tokens)
        added = tf.gather(top, tf.maximum(kept - size, 0) % tokens)
        new_lengths = tf.gather(lengths, parent) + tf.where(is_stay, 0, 1)
        write = (positions[None, :] == (new_lengths - 1)[:, None]) & ~is_stay[:, None]
        new_prefixes = tf.where(write, added[:, None], tf.gather(prefixes, parent))
        new_blank = tf.where(is_stay, tf.gather(stay_blank, parent), _NEG_INF)
        extended = tf.gather(flat_extend, tf.maximum(kept - size, 0))
        new_token = tf.where(is_stay, tf.gather(stay_token, parent), extended)
        alive = tf.gather(scores, kept) > _NEG_INF
        return {
            "prefixes": new_prefixes,
            "prefix_lengths": tf.where(alive, new_lengths, -1),
            "prefix_blank": tf.where(alive, new_blank, _NEG_INF),
            "prefix_token": tf.where(alive, new_token, _NEG_INF),
        }


def _logaddexp(a, b):
    """`log(exp(a) + exp(b))`, -inf where both are."""
    high = tf.maximum(a, b)
    safe = tf.where(high > _NEG_INF, high, 0.0)
    summed = safe + tf.math.log(tf.exp(a - safe) + tf.exp(b - safe))
    return tf.where(high > _NEG_INF, summed, _NEG_INF)
