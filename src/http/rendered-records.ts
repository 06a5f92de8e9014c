/** Rendered bodies kept at most, in bytes (about 500 lists of 100 instances). */
const MAX_BYTES = 32 * 1024 * 1024;

/**
 * Instance records rendered as JSON once and sent again while they cannot have changed: each
 * body is kept with the account's records version it was rendered at (see
 * `InstanceService.recordsVersion`), and a request that finds the same version sends the same
 * bytes without reading rows, decrypting secrets or serializing. The version is read before the
 * rows, so a change landing in between makes the next request render again, never serve stale.
 * Least recently used bodies go first once MAX_BYTES is reached.
 */
export class RenderedRecords {
  private readonly bodies = new Map<string, { readonly version: number; readonly body: string }>();
  private bytes = 0;

  constructor(private readonly maxBytes = MAX_BYTES) {}

  /** The body rendered for `key` at `version`, if kept. */
  get(key: string, version: number): string | undefined {
    const hit = this.bodies.get(key);
    if (!hit) return undefined;
    if (hit.version !== version) {
      this.drop(key);
      return undefined;
    }
    // most recently used last
    this.bodies.delete(key);
    this.bodies.set(key, hit);
    return hit.body;
  }

  set(key: string, version: number, body: string): void {
    this.drop(key);
    if (body.length > this.maxBytes) return;
    this.bodies.set(key, { version, body });
    this.bytes += body.length;
    for (const oldest of this.bodies.keys()) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(oldest);
    }
  }

  private drop(key: string): void {
    const old = this.bodies.get(key);
    if (!old) return;
    this.bodies.delete(key);
    this.bytes -= old.body.length;
  }
}
