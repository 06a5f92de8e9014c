import { describe, expect, it } from 'vitest';
import { RenderedRecords } from './rendered-records.js';

describe('RenderedRecords', () => {
  it('gives a body back only at the version it was rendered at', () => {
    const r = new RenderedRecords();
    r.set('a/', 3, '{"data":[]}');
    expect(r.get('a/', 3)).toBe('{"data":[]}');
    expect(r.get('a/', 4)).toBeUndefined();
    // a newer version dropped the old body for good
    expect(r.get('a/', 3)).toBeUndefined();
  });

  it('drops the least recently used bodies beyond its size', () => {
    const r = new RenderedRecords(10);
    r.set('a', 1, '12345');
    r.set('b', 1, '12345');
    expect(r.get('a', 1)).toBe('12345'); // a is now the most recent
    r.set('c', 1, '12345');
    expect(r.get('b', 1)).toBeUndefined();
    expect(r.get('a', 1)).toBe('12345');
    expect(r.get('c', 1)).toBe('12345');
    r.set('huge', 1, 'x'.repeat(11));
    expect(r.get('huge', 1)).toBeUndefined();
  });
});
