import type { ClientMessage, ServerMessage } from "../protocol/messages";

/**
 * The one WebSocket to the server. Binary messages are frames, text messages
 * JSON. It reconnects with a growing delay, so restarting `starling serve` needs
 * no page reload.
 *
 * The socket runs in a worker (see socket.worker.ts) so that receiving big
 * frames does not compete with rendering for the main thread; where workers are
 * unavailable it falls back to a socket on the main thread.
 */
export class Connection {
  private socket: WebSocket | null = null;
  private worker: Worker | null = null;
  private retryMs = 500;
  private closedByUser = false;
  connected = false;
  bytesReceived = 0;
  framesReceived = 0;
  /** Frames that arrived while the page was still busy with an earlier one. */
  framesDropped = 0;

  constructor(
    private readonly url: string,
    private readonly onFrame: (buffer: ArrayBuffer) => void,
    private readonly onMessage: (message: ServerMessage) => void,
    private readonly onState: (connected: boolean) => void,
  ) {}

  static defaultUrl(): string {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    return `${scheme}://${location.host}/ws`;
  }

  open(): void {
    this.closedByUser = false;
    try {
      this.worker = new Worker(new URL("./socket.worker.ts", import.meta.url), { type: "module" });
    } catch {
      this.worker = null;
    }
    if (!this.worker) {
      this.openDirect();
      return;
    }
    this.worker.onmessage = (event: MessageEvent) => {
      const m = event.data;
      if (m.kind === "frame") {
        this.framesReceived = m.received;
        this.framesDropped = m.dropped;
        this.bytesReceived = m.bytes;
        this.worker!.postMessage({ kind: "ready" });
        this.onFrame(m.buffer as ArrayBuffer);
      } else if (m.kind === "text") {
        this.handleText(m.data as string);
      } else if (m.kind === "state") {
        this.setConnected(m.connected as boolean);
      }
    };
    this.worker.onerror = () => {
      // A worker that cannot start (blocked, unsupported) must not leave the page dark.
      this.worker?.terminate();
      this.worker = null;
      this.openDirect();
    };
    this.worker.postMessage({ kind: "open", url: this.url });
  }

  private openDirect(): void {
    const socket = new WebSocket(this.url);
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      this.retryMs = 500;
      this.setConnected(true);
    };
    socket.onmessage = (event: MessageEvent) => {
      if (event.data instanceof ArrayBuffer) {
        this.bytesReceived += event.data.byteLength;
        this.framesReceived++;
        this.onFrame(event.data);
      } else {
        this.handleText(event.data as string);
      }
    };
    socket.onclose = () => {
      this.socket = null;
      this.setConnected(false);
      if (!this.closedByUser) {
        setTimeout(() => this.openDirect(), this.retryMs);
        this.retryMs = Math.min(this.retryMs * 2, 5000);
      }
    };
    this.socket = socket;
  }

  private setConnected(connected: boolean): void {
    this.connected = connected;
    this.onState(connected);
  }

  private handleText(text: string): void {
    let message: ServerMessage;
    try {
      message = JSON.parse(text) as ServerMessage;
    } catch {
      return;
    }
    this.onMessage(message);
  }

  close(): void {
    this.closedByUser = true;
    this.worker?.postMessage({ kind: "close" });
    this.socket?.close();
  }

  send(message: ClientMessage): boolean {
    if (!this.connected) return false;
    const text = JSON.stringify(message);
    if (this.worker) {
      this.worker.postMessage({ kind: "send", text });
      return true;
    }
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(text);
    return true;
  }
}
