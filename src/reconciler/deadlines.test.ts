import { describe, expect, it } from 'vitest';
import type { Instance } from '../domain/model.js';
import { anythingDue, untilNextDeadline } from './deadlines.js';

const NOW = 1_800_000_000_000;
/** Only the instance's rotation matters here. */
const inst = (passwordRotationEndsAt: number | null) => ({ passwordRotationEndsAt }) as Instance;
const acl = (expiresAt: number | null, deleting = false) => ({ expiresAt, deleting });
const user = (rotationEndsAt: number | null) => ({ rotationEndsAt });

describe('deadlines read off what a pass has read', () => {
  it('nothing is due, and nothing to wait for, without deadlines', () => {
    const timed = { acls: [acl(null)], users: [user(null)] };
    expect(anythingDue(inst(null), timed, NOW)).toBe(false);
    expect(untilNextDeadline(inst(null), timed, NOW, NOW)).toBeUndefined();
  });

  it('an ACL expiring now or before is due; one already being removed is not', () => {
    expect(anythingDue(inst(null), { acls: [acl(NOW)], users: [] }, NOW)).toBe(true);
    expect(anythingDue(inst(null), { acls: [acl(NOW - 5_000)], users: [] }, NOW)).toBe(true);
    expect(anythingDue(inst(null), { acls: [acl(NOW - 5_000, true)], users: [] }, NOW)).toBe(false);
    expect(anythingDue(inst(null), { acls: [acl(NOW + 1)], users: [] }, NOW)).toBe(false);
  });

  it("the end of the instance's or of a user's rotation is due at its time", () => {
    expect(anythingDue(inst(NOW), { acls: [], users: [] }, NOW)).toBe(true);
    expect(anythingDue(inst(NOW + 1), { acls: [], users: [] }, NOW)).toBe(false);
    expect(anythingDue(inst(null), { acls: [], users: [user(NOW - 1)] }, NOW)).toBe(true);
    expect(anythingDue(inst(null), { acls: [], users: [user(NOW + 1)] }, NOW)).toBe(false);
  });

  it('waits for the earliest deadline still to come, of any kind', () => {
    const timed = { acls: [acl(NOW + 9_000), acl(NOW + 2_000, true), acl(NOW - 1)], users: [user(NOW + 7_000)] };
    expect(untilNextDeadline(inst(NOW + 8_000), timed, NOW, NOW)).toBe(7_000);
    expect(untilNextDeadline(inst(NOW + 3_000), timed, NOW, NOW)).toBe(3_000);
    expect(untilNextDeadline(inst(null), { acls: [acl(NOW + 4_000)], users: [] }, NOW, NOW)).toBe(4_000);
  });

  it('waits an hour at most', () => {
    expect(untilNextDeadline(inst(null), { acls: [acl(NOW + 30 * 86_400_000)], users: [] }, NOW, NOW)).toBe(3_600_000);
  });

  it('a deadline that came due while the pass ran (after it carried out what was due) asks for a pass at once', () => {
    const timed = { acls: [acl(NOW + 300), acl(NOW + 9_000)], users: [] };
    // the pass carried out what was due at NOW, and ends at NOW + 500
    expect(untilNextDeadline(inst(null), timed, NOW, NOW + 500)).toBe(0);
    expect(untilNextDeadline(inst(null), { acls: [acl(NOW + 9_000)], users: [] }, NOW, NOW + 500)).toBe(8_500);
  });
});
