// An AudioWorklet that turns the microphone's first channel, at the audio
// context's rate, into 16-bit PCM at `targetRate` and posts it in messages of
// `messageSeconds` (an ArrayBuffer each, transferred).
//
// Resampling is a windowed-sinc low-pass read at each output's position in
// the input (8 zero crossings each side, cutoff at 90% of the output's
// Nyquist frequency): no aliasing from 48 kHz, any rate ratio.
class PcmWorklet extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const settings = options.processorOptions || {};
    this.targetRate = settings.targetRate || 16000;
    this.step = sampleRate / this.targetRate; // input samples per output sample
    this.cutoff = Math.min(1, this.targetRate / sampleRate) * 0.9; // of the input's Nyquist
    this.reach = Math.ceil(8 / this.cutoff); // input samples either side of an output
    this.input = new Float32Array(0); // input not yet read past
    this.inputStart = 0; // the stream index of input[0]
    this.position = 0; // the next output's position, in input samples
    this.messageSamples = Math.round(this.targetRate * (settings.messageSeconds || 0.1));
    this.out = new Int16Array(this.messageSamples);
    this.filled = 0;
  }

  kernel(distance) {
    if (distance === 0) return this.cutoff;
    const x = Math.PI * this.cutoff * distance;
    const window = 0.5 + 0.5 * Math.cos((Math.PI * distance) / (this.reach + 1)); // Hann
    return (this.cutoff * Math.sin(x)) / x * window;
  }

  emit(value) {
    const clipped = Math.max(-1, Math.min(1, value));
    this.out[this.filled++] = Math.round(clipped * 32767);
    if (this.filled === this.messageSamples) {
      this.port.postMessage(this.out.buffer, [this.out.buffer]); // detaches this.out
      this.out = new Int16Array(this.messageSamples);
      this.filled = 0;
    }
  }

  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (!channel) return true;
    const joined = new Float32Array(this.input.length + channel.length);
    joined.set(this.input);
    joined.set(channel, this.input.length);
    this.input = joined;
    const end = this.inputStart + this.input.length;
    if (this.step === 1) {
      for (const sample of channel) this.emit(sample);
      this.input = new Float32Array(0);
      this.inputStart = end;
      return true;
    }
    while (this.position + this.reach < end) {
      const centre = Math.round(this.position);
      let sum = 0;
      for (let i = centre - this.reach; i <= centre + this.reach; i++) {
        const index = i - this.inputStart;
        if (index >= 0) sum += this.input[index] * this.kernel(i - this.position);
      }
      this.emit(sum);
      this.position += this.step;
    }
    const keep = Math.max(Math.floor(this.position) - this.reach - this.inputStart, 0);
    this.input = this.input.slice(keep);
    this.inputStart += keep;
    return true;
  }
}

registerProcessor("pcm-worklet", PcmWorklet);
