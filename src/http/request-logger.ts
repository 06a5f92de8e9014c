import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

/**
 * `req.log` of a request, made when the request first logs through it: most requests never do
 * (their one line is written by the onResponse hook), and a pino child costs its bindings
 * serialized and its redaction set up, on every request. Once made it is the child Fastify would
 * have made, with the request id bound.
 */
export class RequestLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  fatal(...args: unknown[]): void {
    log(this.logger, 'fatal', args);
  }
  error(...args: unknown[]): void {
    log(this.logger, 'error', args);
  }
  warn(...args: unknown[]): void {
    log(this.logger, 'warn', args);
  }
  info(...args: unknown[]): void {
    log(this.logger, 'info', args);
  }
  debug(...args: unknown[]): void {
    log(this.logger, 'debug', args);
  }
  trace(...args: unknown[]): void {
    log(this.logger, 'trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

function log(logger: FastifyBaseLogger, level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace', args: unknown[]): void {
  (logger[level] as (...a: unknown[]) => void).apply(logger, args);
}
