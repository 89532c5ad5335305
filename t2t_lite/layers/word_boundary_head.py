"""Where words start and end, on the 10 ms feature frames: a small head beside the encoder."""

import keras
from keras import ops

from t2t_lite.layers._utils import clone_initializer
from t2t_lite.layers.speech_front_end import SpeechFrontEnd


@keras.saving.register_keras_serializable(package="t2t_lite")
class WordBoundaryHead(keras.layers.Layer):
    """Per feature frame, the logits of "a word starts here" and "a word ends here".

    A CTC head speaks once per encoder frame (40 ms: the speech front end
    reduces 4 feature frames to one, `SpeechFrontEnd.frames_per_output`) and
    fires when it has heard enough of a token, not where the word begins. This head looks at
    the 10 ms feature frames themselves, where a boundary shows as a change
    in the spectrum, and at the encoder frame around each (which sound it
    is), so a word time can be placed on the feature frames, wherever the CTC
    head fired (`decoding/timing/boundary_refinement.py`):

        x[j]      = concat(features[j], memory[t(j)])   # t(j): encoder frame centred nearest j
        h         = relu(conv_k(relu(conv_k(dense(x)))))
        logits[j] = dense_2(h)[j]                       # [start, end]

    The encoder output is read through `stop_gradient`: the head learns from
    what the encoder knows but never changes it, so training it leaves
    recognition as it was.

    Args:
        hidden: channels of the head's layers.
        kernel_size: width in feature frames of its two convolutions.
        kernel_initializer: initializer of every kernel.

    Call arguments:
        features: float `[batch, frames, mel_bins, channels]`, the model's input.
        memory: float `[batch, encoder_frames, hidden_size]`, the encoder output.

    Returns:
        `[batch, frames, 2]` logits (the compute dtype): word start, word end.

    Example:

    ```python
    head = WordBoundaryHead(hidden=16)
    logits = head(np.zeros([2, 100, 80, 3]), np.zeros([2, 25, 128]))  # [2, 100, 2]
    ```
    """

    def __init__(self, hidden=32, kernel_size=5, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if hidden < 1 or kernel_size < 1:
            raise ValueError(
                f"WordBoundaryHead needs hidden and kernel_size >= 1, got {hidden}, {kernel_size}."
            )
        self.hidden = hidden
        self.kernel_size = kernel_size
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        # Where the speech front end's output frames sit on its input frames.
        self.frames_per_step, self.first_middle = SpeechFrontEnd.frames_per_output()

        def dense(units, name):
            return keras.layers.Dense(
                units,
                kernel_initializer=clone_initializer(self.kernel_initializer),
                dtype=self.dtype_policy,
                name=name,
            )

        def conv(name):
            return keras.layers.Conv1D(
                hidden,
                kernel_size,
                padding="same",
                activation="relu",
                kernel_initializer=clone_initializer(self.kernel_initializer),
                dtype=self.dtype_policy,
                name=name,
            )

        self.input_projection = dense(hidden, "input_projection")
        self.conv_1 = conv("conv_1")
        self.conv_2 = conv("conv_2")
        self.output_projection = dense(2, "output_projection")

    def build(self, features_shape, memory_shape):
        bins_channels = features_shape[-2] * features_shape[-1]
        self.input_projection.build((None, None, bins_channels + memory_shape[-1]))
        self.conv_1.build((None, None, self.hidden))
        self.conv_2.build((None, None, self.hidden))
        self.output_projection.build((None, None, self.hidden))

    def encoder_frame_of(self, num_frames, num_encoder_frames):
        """int32 `[num_frames]`: the encoder frame whose middle is nearest each feature frame."""
        frames = ops.arange(num_frames, dtype="float32")
        # Frame t covers feature frames [middle - step/2, middle + step/2).
        nearest = ops.floor((frames - self.first_middle) / self.frames_per_step + 0.5)
        return ops.clip(ops.cast(nearest, "int32"), 0, ops.maximum(num_encoder_frames - 1, 0))

    def call(self, features, memory):
        shape = ops.shape(features)
        batch, frames = shape[0], shape[1]
        flat = ops.reshape(features, (batch, frames, shape[2] * shape[3]))
        index = self.encoder_frame_of(frames, ops.shape(memory)[1])
        nearest = ops.take(ops.stop_gradient(memory), index, axis=1)  # [batch, frames, hidden]
        x = ops.concatenate([ops.cast(flat, nearest.dtype), nearest], axis=-1)
        x = self.conv_2(self.conv_1(self.input_projection(x)))
        return self.output_projection(x)

    def compute_output_shape(self, features_shape, memory_shape):
        return (features_shape[0], features_shape[1], 2)

    def get_config(self):
        config = super().get_config()
        initializer = keras.initializers.serialize(self.kernel_initializer)
        config.update(hidden=self.hidden, kernel_size=self.kernel_size)
        config.update(kernel_initializer=initializer)
        return config
