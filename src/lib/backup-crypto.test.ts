import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Digest, decryptStream, encryptStream, encryptedSize, newDataKey, verifyStream } from './backup-crypto.js';
import { chain } from './streams.js';

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** `data` in chunks of `size` bytes, as files and sockets deliver them. */
const chunked = (data: Buffer, size: number) =>
  Readable.from(Array.from({ length: Math.ceil(data.length / size) }, (_, i) => data.subarray(i * size, (i + 1) * size)));

describe('backup objects', () => {
  const key = newDataKey();
  const plain = randomBytes(300_001);

  it('round-trips in any chunking, the object being header + data + tag, the digest that of the plain bytes', async () => {
    const digest = new Digest();
    const object = await collect(chain(chunked(plain, 7919), digest, encryptStream(key)));
    expect(object.length).toBe(encryptedSize(plain.length));
    expect(object.subarray(0, 4).toString()).toBe('HGBK');
    expect(digest.sha256).toBe(createHash('sha256').update(plain).digest('hex'));
    for (const size of [1, 13, 16, 17, 65_536])
      expect((await collect(chain(chunked(object, size), decryptStream(key)))).equals(plain)).toBe(true);
  });

  it('fails at the end when a byte changed, the object is cut short, the key is another, or it is no backup', async () => {
    const object = await collect(chain(Readable.from([plain]), encryptStream(key)));
    const flipped = Buffer.from(object);
    flipped[1000]! ^= 1;
    await expect(collect(chain(Readable.from([flipped]), decryptStream(key)))).rejects.toThrow(/authentication failed/);
    await expect(collect(chain(Readable.from([object.subarray(0, object.length - 100)]), decryptStream(key)))).rejects.toThrow(
      /authentication failed/,
    );
    await expect(collect(chain(Readable.from([object.subarray(0, 20)]), decryptStream(key)))).rejects.toThrow(/truncated|authentication/);
    await expect(collect(chain(Readable.from([object]), decryptStream(newDataKey())))).rejects.toThrow(/authentication failed/);
    await expect(collect(chain(Readable.from([Buffer.from('REDIS0009 not encrypted at all')]), decryptStream(key)))).rejects.toThrow(
      /wrong header/,
    );
  });

  it('verifies a snapshot against its recorded SHA-256 and size', async () => {
    const sha256 = createHash('sha256').update(plain).digest('hex');
    expect((await collect(chain(Readable.from([plain]), verifyStream({ sha256, sizeBytes: plain.length })))).length).toBe(plain.length);
    await expect(collect(chain(Readable.from([plain]), verifyStream({ sha256: '0'.repeat(64), sizeBytes: plain.length })))).rejects.toThrow(
      /not the 0{64}/,
    );
    // what a reader got of a snapshot that fails: never all of it
    let got = 0;
    const failing = chain(chunked(plain, 1000), verifyStream({ sha256: '0'.repeat(64), sizeBytes: plain.length }));
    await expect(
      (async () => {
        for await (const c of failing) got += (c as Buffer).length;
      })(),
    ).rejects.toThrow();
    expect(got).toBeLessThan(plain.length);
  });
});
