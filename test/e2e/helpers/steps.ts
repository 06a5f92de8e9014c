import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The sources of hangar, to list its step names (read as text: e2e tests import nothing from src). */
const SRC = join(import.meta.dirname, '..', '..', '..', 'src');

/** Where the steps of the local runtime's work are named (the emulated runtime and other engines have their own). */
const STEP_SOURCES = ['reconciler', 'service', 'runtimes/local', 'engines/redis'];

/** Step names the redis engine builds from its roles rather than writes out. */
export const COMPUTED_STEPS = [
  'create:primary-started',
  'create:replica-started',
  'ensure:primary-restarted',
  'ensure:replica-restarted',
  'resize:primary-set',
  'resize:replica-set',
  'access:primary-applied',
  'access:replica-applied',
];

/** Every step name written out in the sources of the local runtime's work (`step('x:y')`). */
export function literalStepNames(): string[] {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(/\bstep\('([a-z0-9-]+:[a-z0-9-]+)'\)/g)) names.add(m[1]!);
      }
    }
  };
  for (const d of STEP_SOURCES) walk(join(SRC, d));
  return [...names].sort();
}

/** The steps of MongoDB user work (run here on the emulated runtime: no mongod on this machine). */
export const USER_STEPS = [
  'user-create:inserted',
  'user-create:recorded',
  'user-create:applied',
  'user-update:changed',
  'user-update:recorded',
  'user-update:applied',
  'user-delete:marked',
  'user-delete:recorded',
  'user-delete:dropped',
] as const;
