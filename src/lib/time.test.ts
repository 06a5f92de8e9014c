import { describe, expect, it } from 'vitest';
import { formatCreated } from './time.js';

describe('formatCreated', () => {
  it('prints UTC as YYYY-MM-DD HH:MM:SS', () => {
    expect(formatCreated(Date.UTC(2024, 0, 2, 3, 4, 5, 678))).toBe('2024-01-02 03:04:05');
  });
});
