// The page's behaviour: the microphone streamed over /v1/stream (partials
// and finals shown as they come), and a file posted to /v1/transcribe.
const TARGET_RATE = 16000;
const micButton = document.getElementById("mic");
const statusText = document.getElementById("status");
const finals = document.getElementById("finals");
const partial = document.getElementById("partial");
let live = null; // {socket, context, media} while the microphone streams

// The hotwords box's phrases, a line each ("PHRASE :BOOST" sets one's boost).
function hotwords() {
  return document.getElementById("hotwords").value.split("\n").map((line) => line.trim()).filter(Boolean);
}

function setStatus(text) {
  statusText.textContent = text;
}

function showFinal(message) {
  const line = document.createElement("p");
  line.className = "final";
  const time = document.createElement("span");
  time.className = "time";
  time.textContent = `${message.start.toFixed(1)}–${message.end.toFixed(1)} s`;
  const text = document.createElement("span");
  text.className = "text";
  text.textContent = message.text;
  text.title = (message.words || [])
    .map((w) => `${w.word} ${w.start.toFixed(2)}–${w.end.toFixed(2)} s (${Math.round(w.confidence * 100)}%)`)
    .join("\n");
  line.append(time, text);
  finals.append(line);
  partial.textContent = "";
}

function onMessage(event) {
  const message = JSON.parse(event.data);
  if (message.type === "ready") {
    const listed = message.hotwords ? `, ${message.hotwords} hotword${message.hotwords > 1 ? "s" : ""}` : "";
    setStatus(`Listening (model ${message.model_version}${listed}).`);
  }
  else if (message.type === "partial") partial.textContent = message.text;
  else if (message.type === "final") showFinal(message);
  else if (message.type === "error") setStatus(`Error: ${message.error}`);
}

async function startMicrophone() {
  const media = await navigator.mediaDevices.getUserMedia({
    // The browser's noise suppression and gain control would change the audio
    // the model hears from what it was trained on; echo cancellation is kept.
    audio: { channelCount: 1, echoCancellation: true, noiseSuppression: false, autoGainControl: false },
  });
  const context = new AudioContext();
  await context.audioWorklet.addModule("/page/pcm-worklet.js");
  const source = context.createMediaStreamSource(media);
  const worklet = new AudioWorkletNode(context, "pcm-worklet", {
    processorOptions: { targetRate: TARGET_RATE, messageSeconds: 0.1 },
  });
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/v1/stream`);
  socket.binaryType = "arraybuffer";
  socket.onopen = () =>
    socket.send(JSON.stringify({ type: "start", sample_rate: TARGET_RATE, format: "s16le", hotwords: hotwords() }));
  socket.onmessage = onMessage;
  socket.onclose = (event) => {
    if (live && live.socket === socket) stopMicrophone(false);
    if (event.code !== 1000 && event.code !== 1005) setStatus(`Stream closed: ${event.reason || event.code}`);
  };
  worklet.port.onmessage = (event) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(event.data);
    live.sent += 1;
  };
  worklet.onprocessorerror = () => setStatus("The audio worklet failed: see the browser's console.");
  source.connect(worklet);
  worklet.connect(context.destination); // the worklet writes silence; this keeps it running
  live = { socket, context, media, sent: 0 }; // sent: audio messages so far
  micButton.textContent = "Stop";
  micButton.classList.add("live");
  setStatus("Connecting…");
}

function stopMicrophone(sendEnd = true) {
  if (!live) return;
  const { socket, context, media } = live;
  live = null;
  media.getTracks().forEach((track) => track.stop());
  context.close();
  if (sendEnd && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "end" }));
  micButton.textContent = "Start microphone";
  micButton.classList.remove("live");
  setStatus("Not listening.");
}

micButton.addEventListener("click", () => {
  if (live) stopMicrophone();
  else startMicrophone().catch((error) => setStatus(`Microphone unavailable: ${error.message}`));
});

document.getElementById("file").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  if (!file) return;
  const uploadStatus = document.getElementById("upload-status");
  const result = document.getElementById("upload-result");
  uploadStatus.textContent = "Transcribing…";
  const query = new URLSearchParams(hotwords().map((phrase) => ["hotwords", phrase]));
  const response = await fetch(`/v1/transcribe?${query}`, {
    method: "POST",
    headers: { "Content-Type": file.type || "application/octet-stream" },
    body: file,
  });
  const answer = await response.json();
  uploadStatus.textContent = response.ok ? `${answer.duration.toFixed(1)} s` : `Error ${response.status}`;
  result.textContent = response.ok ? answer.text : answer.error;
});
