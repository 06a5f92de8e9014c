import type { Config } from '../config.js';
import type { InstanceType, Service } from '../domain/catalog.js';
import type { AccessGroup, EdgeRoute } from '../domain/endpoints.js';
import type { Instance, PortMap } from '../domain/model.js';
import type { FoundProgram, UnavailableVersion } from '../domain/units.js';
import type { InstalledEngine } from './install/engine-manifest.js';
import type { ProgramSpec } from '../lib/binaries.js';
import type { Engine } from './engine.js';

/**
 * A product module: everything hangar knows of one engine product (Redis, Valkey, mongod,
 * Elasticsearch...), in one place. The rest of hangar asks the product registry
 * (`engines/products.ts`) instead of switching on a name: the API's catalog and records, the
 * reconciler's done state and after-build steps, the memory a plan promises, the programs and
 * images a runtime needs, how the CLI connects. A new engine is a folder with one of these and
 * a line in the registry.
 */

/** What a plan number counts: MB of memory (Redis) or GB (the spec's other services). */
export type PlanUnit = 'MB' | 'GB';

/** What an instance of the product offers beyond the spec's common routes (instances, ACLs). */
export interface ProductFeatures {
  /** Clients authenticate with the instance's password, shown in its record. */
  readonly password: boolean;
  /** The spec's Redis routes (`/v2/redis/<name>/...`: inspection, resize) and hangar's Redis users and settings. */
  readonly redisApi: boolean;
  /** The spec's MongoDB users (`/v2/mongodb/<name>/...`), applied to the engine after every build. */
  readonly databaseUsers: boolean;
  /** `encryption` in a create body. */
  readonly encryption: boolean;
  /** `storage_engine` values a create body may name; absent: the field does not apply. */
  readonly storageEngines?: readonly string[];
  /** ACL flags that open listeners beyond the main ones (`transport`, `kibana`). */
  readonly aclGroups: readonly Exclude<AccessGroup, 'main'>[];
}

/** How the local runtime gets a product's engine: the programs it runs, and the engine over them. */
export interface LocalForm {
  /**
   * Programs it needs, the first being the engine whose version instances are created with.
   * Where the product runs installs of the engine cache (`cached`), they are needed only when
   * none is installed: the engine then runs the cache's versions and the program's.
   */
  readonly programs: readonly ProgramSpec[];
  /** Programs it uses when found (Kibana beside Elasticsearch). */
  readonly optional?: readonly ProgramSpec[];
  /** Products of the engine cache (`hangar engines install <product>@<version>`) whose installs it runs, in order of preference. */
  readonly cached?: readonly string[];
  /** What to install when a program is missing, in words for operators. */
  readonly install: string;
  /**
   * Versions it knows of (the API's list, what hangar installs) that are not among `served`, each
   * with why; absent: it says nothing of versions it does not serve.
   */
  unavailableVersions?(served: readonly string[]): UnavailableVersion[];
  /** The engine over the programs found (`found[key]` for each needed one, optional ones when found) and the installs. */
  engine(found: Readonly<Record<string, FoundProgram>>, ctx: LocalEngineContext): Engine;
}

export interface LocalEngineContext {
  readonly config: Config;
  /** Every version found of each program, newest first (the engine cache may hold several; `found` has the newest). */
  readonly installed?: Readonly<Record<string, readonly FoundProgram[]>>;
  /** PATH for the tools engines run (tar for backups). */
  readonly searchPath?: string;
  /** The engine cache's installs of the product's `cached` products (none when it names none). */
  readonly installs: readonly InstalledEngine[];
}

/** How a Kubernetes zone gets a product's engine: its images and the engine's cluster form. */
export interface ClusterForm {
  /** The official image of a version, used where the zone names none. */
  officialImage(version: string): string;
  /** Versions offered with the official images, where the zone names no image of the product. */
  readonly defaultVersions: readonly string[];
  /** Why the product does not run on Kubernetes zones at all; absent: it does. */
  readonly unavailableReason?: string;
  engine(config: Config): Engine;
}

/** How `hangar connect` opens a shell on an instance, from its record. */
export interface ShellCommand {
  readonly command: string;
  readonly args: readonly string[];
  /** Added to the environment: secrets travel here, not in the process list. */
  readonly env: Readonly<Record<string, string>>;
}

/** The parts of an instance record a shell needs (the API's wire names). */
export interface ShellTarget {
  readonly name: string;
  readonly connect_string?: string;
  readonly public_connect_string?: string;
  readonly servicenet_connect_string?: string;
  readonly password?: string | null;
}

export interface Shell {
  /** The program, and where to get it. */
  readonly program: string;
  readonly install: string;
  command(inst: ShellTarget, opts: { servicenet?: boolean; user?: string; db?: string }, extra: readonly string[]): ShellCommand;
}

export interface Product {
  /** Its name in the API (`engine` in create bodies and records): `redis`, `valkey`, `mongod`, ... */
  readonly name: string;
  /** Its name for people. */
  readonly label: string;
  /** The service of the API it serves. */
  readonly service: Service;
  /** Instance types of its service it can run. */
  readonly types: readonly InstanceType[];
  readonly planUnit: PlanUnit;
  /** The state of an instance that serves: ACTIVE, or COMPLETED (the spec's word for Elasticsearch). */
  readonly doneState: 'ACTIVE' | 'COMPLETED';
  readonly features: ProductFeatures;
  /** The ports an instance owns, by role (see domain/endpoints.ts). */
  portRoles(type: InstanceType): readonly string[];
  /** The edge listeners of an instance and the engine port each forwards to. */
  edgeRoutes(type: InstanceType, ports: PortMap): EdgeRoute[];
  /** The memory an instance promises on its plan, in MB: what zone capacity is counted in. */
  promisedMemoryMb(type: InstanceType, plan: number): number;
  /** How that promise is counted, in words (refusals, the README). */
  memoryRule(type: InstanceType, plan: number): string;
  /** The fields of its instance records beyond the common ones (connect strings...), in the spec's order. */
  recordFields(inst: Instance, host: string): Record<string, unknown>;
  /** Versions the emulated runtime offers. */
  readonly emulatedVersions: readonly string[];
  readonly local: LocalForm;
  readonly cluster: ClusterForm;
  /** How a person connects from a shell; absent: it has none (HTTP). */
  readonly shell?: Shell;
}
