import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { EmulatedRuntime } from './emulated/emulated-runtime.js';
import { LocalRuntime } from './local/local-runtime.js';
import type { Runtime } from './runtime.js';

/** The runtime the configuration names. */
export async function createRuntime(config: Config, log: Logger): Promise<Runtime> {
  switch (config.runtime) {
    case 'emulated':
      return new EmulatedRuntime({ redisMaxmemoryPolicy: config.redisMaxmemoryPolicy });
    case 'local':
      // PATH is not a hangar setting: it locates the engine binaries like a shell would, and is
      // the only variable the engine processes inherit (hangar's own environment holds secrets).
      return LocalRuntime.create(config, log, process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin');
  }
}
