/// <reference lib="webworker" />
/**
 * The WebSocket lives in this worker, not on the page's main thread.
 *
 * A browser delivers a large binary message to script in many small chunks, each
 * a task on the receiving thread. On the main thread those tasks wait behind
 * every animation frame, so a busy renderer throttled a 1.6 MB frame stream to a
 * couple of frames per second. Here they run on their own thread; complete
 * frames are handed to the page by transfer (no copy), and only one at a time:
 * until the page takes a frame, newer ones replace it (and are counted dropped),
 * so a slow page never builds a backlog.
 */

type ToWorker = { kind: "open"; url: string } | { kind: "send"; text: string } | { kind: "ready" } | { kind: "close" };

const ctx = self as unknown as DedicatedWorkerGlobalScope;
let socket: WebSocket | null = null;
let url = "";
let retryMs = 500;
let closedByPage = false;
let held: ArrayBuffer | null = null;
let pageReady = true;
let received = 0;
let dropped = 0;
let bytes = 0;

function deliver(): void {
  if (!held || !pageReady) return;
  const buffer = held;
  held = null;
  pageReady = false;
  ctx.postMessage({ kind: "frame", buffer, received, dropped, bytes }, [buffer]);
}

function open(): void {
  const ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  ws.onopen = () => {
    retryMs = 500;
    ctx.postMessage({ kind: "state", connected: true });
  };
  ws.onmessage = (event: MessageEvent) => {
    if (event.data instanceof ArrayBuffer) {
      received++;
      bytes += event.data.byteLength;
      if (held) dropped++;
      held = event.data;
      deliver();
    } else {
      ctx.postMessage({ kind: "text", data: event.data as string });
    }
  };
  ws.onclose = () => {
    socket = null;
    ctx.postMessage({ kind: "state", connected: false });
    if (!closedByPage) {
      setTimeout(open, retryMs);
      retryMs = Math.min(retryMs * 2, 5000);
    }
  };
  socket = ws;
}

ctx.onmessage = (event: MessageEvent<ToWorker>) => {
  const message = event.data;
  switch (message.kind) {
    case "open":
      url = message.url;
      closedByPage = false;
      open();
      break;
    case "send":
      if (socket && socket.readyState === WebSocket.OPEN) socket.send(message.text);
      break;
    case "ready":
      pageReady = true;
      deliver();
      break;
    case "close":
      closedByPage = true;
      socket?.close();
      break;
  }
};
