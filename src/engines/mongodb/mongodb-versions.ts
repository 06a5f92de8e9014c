import { compareVersions, minorVersion } from '../../lib/versions.js';

/** An engine program found on this machine. */
export interface EngineBinary {
  readonly name: string;
  readonly path: string;
  /** `X.Y.Z` */
  readonly version: string;
}

/**
 * Oldest MongoDB server hangar can administer: the official Node.js driver hangar uses (mongodb 6)
 * talks to MongoDB 4.2 and newer (wire version 8) and refuses older servers. The versions of the
 * API's catalogue (2.6, 3.2, 3.4) therefore exist on the emulated runtime only.
 */
export const MONGODB_MINIMUM = '4.2.0';
/** MMAPv1 was removed in MongoDB 4.2: 4.0 is the last version that has it. */
const MMAPV1_LAST = '4.0.99';

/** The `storage_engine` values a mongod of this version can run. */
export function storageEnginesFor(version: string): string[] {
  return compareVersions(version, MMAPV1_LAST) <= 0 ? ['mmapv1', 'wiredtiger'] : ['wiredtiger'];
}

/** Why `storage_engine` cannot be honoured by this mongod, or undefined. */
export function storageEngineRefusal(storageEngine: string | null, version: string): string | undefined {
  if (storageEngine === null || storageEnginesFor(version).includes(storageEngine)) return undefined;
  return `storage_engine ${storageEngine} exists only up to MongoDB 4.0 (it was removed in 4.2); this host runs mongod ${version}: use wiredtiger`;
}

/** What the MongoDB engine can run with these binaries: a reason when it cannot, and the storage engines. */
export function mongodbSupport(
  mongod: EngineBinary,
  mongos: EngineBinary,
): { readonly unavailableReason?: string; readonly storageEngines: readonly string[] } {
  const storageEngines = storageEnginesFor(mongod.version);
  for (const b of [mongod, mongos]) {
    if (compareVersions(b.version, MONGODB_MINIMUM) < 0) {
      return {
        unavailableReason: `${b.name} ${b.version} is older than ${MONGODB_MINIMUM}, the oldest MongoDB the driver hangar uses (mongodb 6 for Node.js) can talk to; install MongoDB ${MONGODB_MINIMUM} or newer`,
        storageEngines,
      };
    }
  }
  // A mongos only works with config servers and shards of its own release series.
  if (minorVersion(mongod.version) !== minorVersion(mongos.version)) {
    return {
      unavailableReason: `mongos ${mongos.version} and mongod ${mongod.version} are of different release series; install both from the same MongoDB release`,
      storageEngines,
    };
  }
  return { storageEngines };
}
