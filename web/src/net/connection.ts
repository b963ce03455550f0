import type { ClientMessage, ServerMessage } from "../protocol/messages";

/**
 * The one WebSocket to the server. Binary messages are frames, text messages
 * JSON; both are handed to callbacks as they arrive. It reconnects with a
 * growing delay so that restarting `starling serve` needs no page reload.
 */
export class Connection {
  private socket: WebSocket | null = null;
  private retryMs = 500;
  private closedByUser = false;
  connected = false;
  bytesReceived = 0;
  framesReceived = 0;

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
    const socket = new WebSocket(this.url);
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      this.connected = true;
      this.retryMs = 500;
      this.onState(true);
    };
    socket.onmessage = (event: MessageEvent) => {
      if (event.data instanceof ArrayBuffer) {
        this.bytesReceived += event.data.byteLength;
        this.framesReceived++;
        this.onFrame(event.data);
      } else {
        let message: ServerMessage;
        try {
          message = JSON.parse(event.data as string) as ServerMessage;
        } catch {
          return;
        }
        this.onMessage(message);
      }
    };
    socket.onclose = () => {
      this.connected = false;
      this.socket = null;
      this.onState(false);
      if (!this.closedByUser) {
        setTimeout(() => this.open(), this.retryMs);
        this.retryMs = Math.min(this.retryMs * 2, 5000);
      }
    };
    this.socket = socket;
  }

  close(): void {
    this.closedByUser = true;
    this.socket?.close();
  }

  send(message: ClientMessage): boolean {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(JSON.stringify(message));
    return true;
  }
}
