import { createSocket, type Socket } from 'node:dgram';
import type { Logger } from 'pino';
import { readText, writeFileIfChanged } from './files.js';
import { instanceOfFrontend, parseDeniedLine, roleOfFrontend } from './haproxy-config.js';
import type { DeniedConnection } from '../runtime.js';

/** Refused connections kept per instance (the oldest go first). */
export const DENIED_KEPT = 100;

/**
 * The edge's log receiver: a UDP socket on loopback to which HAProxy sends one syslog line per
 * refused connection. The last DENIED_KEPT of each instance are kept in memory, and nothing else
 * (no file grows with attacks). Its port is kept in a file of the edge, so that a hangar that
 * starts again listens where the running edge sends (no reload just for the log).
 */
export class DeniedLog {
  private socket: Socket | undefined;
  private readonly byInstance = new Map<string, DeniedConnection[]>();
  private port: number | undefined;

  constructor(
    private readonly portFile: string,
    private readonly log: Logger,
  ) {}

  /** Where HAProxy sends its lines (`127.0.0.1:port`), once listening. */
  get address(): string | undefined {
    return this.port === undefined ? undefined : `127.0.0.1:${this.port}`;
  }

  /** Listens on the port of the last run if it is free, else on a new one (remembered for the next). */
  async listen(): Promise<void> {
    if (this.socket) return;
    const previous = Number(readText(this.portFile)?.trim());
    let socket: Socket;
    try {
      socket = await bind(Number.isInteger(previous) && previous > 0 ? previous : 0);
    } catch {
      socket = await bind(0);
    }
    socket.on('message', (msg) => this.receive(msg.toString('utf8')));
    socket.on('error', (err) => this.log.warn({ err }, 'edge log receiver failed'));
    socket.unref();
    this.socket = socket;
    this.port = socket.address().port;
    writeFileIfChanged(this.portFile, `${this.port}\n`);
  }

  close(): void {
    this.socket?.close();
    this.socket = undefined;
    this.port = undefined;
  }

  private receive(text: string): void {
    for (const line of text.split('\n')) {
      const d = parseDeniedLine(line);
      const id = d && instanceOfFrontend(d.frontend);
      if (!d || id === undefined) continue;
      const list = this.byInstance.get(id) ?? [];
      list.push({ source: d.source, at: d.at, listener: roleOfFrontend(d.frontend) ?? d.frontend });
      if (list.length > DENIED_KEPT) list.splice(0, list.length - DENIED_KEPT);
      this.byInstance.set(id, list);
    }
  }

  /** The last refused connections of an instance, newest first. */
  recent(id: string, limit: number): DeniedConnection[] {
    return [...(this.byInstance.get(id) ?? [])].reverse().slice(0, limit);
  }

  forget(id: string): void {
    this.byInstance.delete(id);
  }
}

function bind(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    socket.once('error', (err) => {
      socket.close();
      reject(err);
    });
    socket.bind(port, '127.0.0.1', () => {
      socket.removeAllListeners('error');
      resolve(socket);
    });
  });
}
