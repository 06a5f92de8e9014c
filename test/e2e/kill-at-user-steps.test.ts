import { describe, expect, it } from 'vitest';
import { HangarProcess } from './helpers/hangar-process.js';
import { USER_STEPS } from './helpers/steps.js';

/**
 * MongoDB user work killed (SIGKILL, by HANGAR_TEST_DIE_AT) at each of its steps, then started
 * again without the fault. No mongod runs on this machine, so these run the built binary on the
 * emulated runtime: it keeps nothing of its engines across a restart, so every user comes back
 * from the store, and the API must list exactly the users whose requests were answered.
 */

const MONGO = { name: 'm', plan: 1, service: 'mongodb', type: 'mongodb_replica_set', version: '3.4.2', zone: 'US-West' };
const READ = [{ role: 'read', db: 'app' }];
const WRITE = [{ role: 'readWrite', db: 'app' }];

type Answer = { status: number; body: any } | undefined;
const survive = (request: Promise<{ status: number; body: any }>): Promise<Answer> => request.catch(() => undefined);

interface UserOperation {
  /** Whether the user exists before the operation. */
  readonly existing: boolean;
  act(h: HangarProcess, id: string): Promise<Answer>;
  /** The user list once converged, given the answer; `rolledBack`: hangar died inside the request's transaction. */
  verify(users: any[], answer: Answer, rolledBack: boolean): void;
}

/** Steps inside a request's transaction: dying there leaves nothing of the change. */
const IN_TRANSACTION = new Set(['user-create:inserted', 'user-update:changed', 'user-delete:marked']);

const OPERATIONS: Record<'create' | 'update' | 'delete', UserOperation> = {
  create: {
    existing: false,
    act: (h, id) => survive(h.post(`/v2/mongodb/${id}/databases/app/users`, { username: 'u', password: 'password-1', roles: READ })),
    verify(users, answer, rolledBack) {
      if (answer) expect(answer.status).toBe(200);
      // an answered create is never lost; an unanswered one may or may not have been recorded,
      // but never half: killed inside its transaction, nothing of it is left
      if (answer) expect(users).toEqual([{ name: 'u', roles: READ }]);
      else expect([[], [{ name: 'u', roles: READ }]]).toContainEqual(users);
      if (rolledBack) expect(users).toEqual([]);
    },
  },
  update: {
    existing: true,
    act: (h, id) => survive(h.patch(`/v2/mongodb/${id}/databases/app/users/u`, { password: 'password-2', roles: WRITE })),
    verify(users, answer, rolledBack) {
      if (answer) expect(answer.status).toBe(200);
      if (answer) expect(users).toEqual([{ name: 'u', roles: WRITE }]);
      else expect([[{ name: 'u', roles: READ }], [{ name: 'u', roles: WRITE }]]).toContainEqual(users);
      if (rolledBack) expect(users).toEqual([{ name: 'u', roles: READ }]);
    },
  },
  delete: {
    existing: true,
    act: (h, id) => survive(h.delete(`/v2/mongodb/${id}/databases/app/users/u`)),
    verify(users, answer, rolledBack) {
      if (answer) expect(answer.status).toBe(200);
      if (answer) expect(users).toEqual([]);
      else expect([[], [{ name: 'u', roles: READ }]]).toContainEqual(users);
      if (rolledBack) expect(users).toEqual([{ name: 'u', roles: READ }]);
    },
  },
};

const CASES = USER_STEPS.map((step) => ({ op: step.slice('user-'.length, step.indexOf(':')) as keyof typeof OPERATIONS, step }));

describe.concurrent('MongoDB user work killed at every step, on the emulated runtime', () => {
  it.each(CASES)(
    'user $op killed at $step: the users listed after a restart are those asked for',
    async ({ op, step }) => {
      const operation = OPERATIONS[op];
      const h = await HangarProcess.start({ runtime: 'emulated', serveEnv: { HANGAR_TEST_DIE_AT: step } });
      try {
        const created = await h.post('/v2/instances/', MONGO);
        expect(created.status).toBe(200);
        const id = created.body.data.id;
        await h.waitFor('m', (r) => r?.state === 'ACTIVE');
        if (operation.existing) {
          expect(
            (await h.post(`/v2/mongodb/${id}/databases/app/users`, { username: 'u', password: 'password-1', roles: READ })).status,
          ).toBe(200);
        }
        const answer = await operation.act(h, id);
        expect(await h.waitExit(20_000), `hangar should die at ${step}`).toEqual({ code: null, signal: 'SIGKILL' });
        await h.serve();
        await h.waitFor('m', (r) => r?.state === 'ACTIVE');
        // the users are applied again to the rebuilt engine by the passes after the restart; the
        // list is the store's, as the API shows it
        const users = (await h.get(`/v2/mongodb/${id}/databases/app/users`)).body.data;
        operation.verify(users, answer, IN_TRANSACTION.has(step));
        // and nothing is left pending: a new change goes through and answers
        const again = await h.post(`/v2/mongodb/${id}/databases/app/users`, { username: 'v', password: 'password-3', roles: READ });
        expect(again.status).toBe(200);
      } finally {
        await h.destroy();
      }
    },
    60_000,
  );
});
