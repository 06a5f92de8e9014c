import type { Io } from './io.js';
import { duration } from './table.js';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const TICK_MS = 100;

/**
 * The live line of a long operation, on stderr: `cache: BUILDING (3.2s)`. On a terminal it is
 * rewritten in place (state, elapsed time, a spinner); otherwise one line is written per
 * change of state, so logs and CI output stay readable.
 */
export class Progress {
  private state: string | undefined;
  private readonly started = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private readonly live: boolean;

  constructor(
    private readonly io: Io,
    private readonly subject: string,
  ) {
    this.live = io.errIsTty === true && io.errRaw !== undefined;
    if (this.live) this.timer = setInterval(() => this.draw(), TICK_MS);
  }

  private get elapsed(): string {
    return duration(Date.now() - this.started);
  }

  private draw(): void {
    if (this.state === undefined) return;
    this.frame = (this.frame + 1) % SPINNER.length;
    this.io.errRaw!(`\r\x1b[2K${SPINNER[this.frame]} ${this.subject}: ${this.state} (${this.elapsed})`);
  }

  /** The state seen by the latest poll. */
  update(state: string): void {
    if (this.live) {
      this.state = state;
      this.draw();
      return;
    }
    if (state !== this.state) this.io.err(`${this.subject}: ${state} (${this.elapsed})`);
    this.state = state;
  }

  /** Replaces the line with a last word (e.g. `ACTIVE`, `deleted`). */
  finish(word: string): void {
    this.halt();
    if (this.live) this.io.errRaw!('\r\x1b[2K');
    this.io.err(`${this.subject}: ${word} after ${this.elapsed}`);
  }

  /** Stops, leaving the last state on screen (the caller reports why). */
  stop(): void {
    this.halt();
    if (this.live && this.state !== undefined) this.io.errRaw!('\n');
  }

  private halt(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
