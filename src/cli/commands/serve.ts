import type { Config } from '../../config.js';
import { DOCS_PATH } from '../../http/plugins/openapi.js';
import { CONSOLE_PATH, servesConsole } from '../../http/routes/root.js';
import { startHangar } from '../../server.js';
import type { Io } from '../io.js';

/** How long a stop may take, after its drain period, before the process exits anyway. */
const STOP_DEADLINE_MS = 9_000;

/**
 * Runs hangar until SIGTERM or SIGINT: then it drains (/readyz 503 while requests are still
 * served), in-flight requests finish, the reconciler stops between steps, and the process exits
 * 0. Engines and the edge keep serving.
 */
export async function serve(config: Config, io: Io): Promise<void> {
  const hangar = await startHangar(config);
  const runtimes = [...new Set(hangar.zones.targets().map((t) => t.runtime.kind))].join('+');
  // One line that says where everything is: the API, the docs page, the console.
  const consoleNote = servesConsole(hangar.app) ? `, console ${hangar.url}${CONSOLE_PATH}` : ', no console (not built)';
  io.err(
    `hangar serving on ${hangar.url}/v2/ (runtime ${runtimes}, zones ${hangar.zones.list().length}, store ${hangar.store.location}); docs ${hangar.url}${DOCS_PATH}${consoleNote}`,
  );
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      hangar.log.info({ signal }, 'stopping');
      const deadline = setTimeout(
        () => {
          hangar.log.error('stop took too long; exiting');
          process.exit(1);
        },
        config.drainSeconds * 1000 + STOP_DEADLINE_MS,
      );
      deadline.unref();
      hangar.close().then(
        () => resolve(),
        (err: unknown) => {
          hangar.log.error({ err }, 'stop failed');
          resolve();
        },
      );
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}
