import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { claimPortRange, freePort } from '../helpers/ports.js';

/** What another process gets when it listens on 127.0.0.1:`port`: `ok` or its error code. */
function otherProcessListens(port: number): string {
  const script = `const s = require('node:net').createServer(); s.once('error', (e) => { console.log(e.code); process.exit(0); }); s.listen(${port}, '127.0.0.1', () => { console.log('ok'); s.close(); });`;
  return spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' }).stdout.trim();
}

/**
 * The ports the tests give their hangars (engines, edge listeners) and their own listeners are
 * claimed, not guessed: a range claimed by one test process is refused to every other process
 * (another file of this run, or a run of another checkout at the same time) for as long as the
 * claiming process lives, so two tests never race for a port.
 */
describe('port ranges of the tests', () => {
  it('ranges claimed in one process never overlap; their claim ports are refused to any other process', async () => {
    const ranges = [];
    for (let i = 0; i < 12; i++) ranges.push(await claimPortRange(i % 3 === 0 ? 200 : 100));
    const sorted = [...ranges].sort((a, b) => a.first - b.first);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]!.first, JSON.stringify(sorted)).toBeGreaterThan(sorted[i - 1]!.last);
    for (const r of ranges) {
      expect(r.last - r.first + 1).toBeGreaterThanOrEqual(99);
      expect(r.first).toBeGreaterThanOrEqual(10_000);
      expect(r.last).toBeLessThan(20_000);
      // the claim is the port before the range: another process cannot take it, so cannot claim the range
      expect(otherProcessListens(r.first - 1)).toBe('EADDRINUSE');
      expect(otherProcessListens(r.first)).toBe('ok');
    }
  });

  it('free ports for a test of its own come from a claimed range, never twice, outside the ephemeral ports', async () => {
    const ports = [];
    for (let i = 0; i < 150; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(10_000);
      expect(p).toBeLessThan(20_000);
    }
    expect(otherProcessListens(ports.at(-1)!)).toBe('ok');
  });
});
