import { crc32, deflateRawSync } from 'node:zlib';

/** One entry of a zip made by makeZip: a file (text or bytes), a directory (name ending in /), or a symbolic link. */
export interface ZipEntry {
  readonly name: string;
  readonly data?: string | Buffer;
  /** Unix permissions (0o644 by default, 0o755 for directories). */
  readonly mode?: number;
  /** A symbolic link's target. */
  readonly link?: string;
  /** Deflate it (otherwise stored). */
  readonly deflate?: boolean;
}

/**
 * A zip archive of `entries`, made as Info-ZIP makes them on Unix (version made by 3, the mode in
 * the upper half of the external attributes). `corruptCrc` writes a wrong CRC-32 for the entry
 * named. Small: no zip64.
 */
export function makeZip(entries: readonly ZipEntry[], opts: { corruptCrc?: string } = {}): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const isDir = e.name.endsWith('/');
    const raw = e.link !== undefined ? Buffer.from(e.link) : Buffer.from(e.data ?? '');
    const body = e.deflate ? deflateRawSync(raw) : raw;
    const type = isDir ? 0o040000 : e.link !== undefined ? 0o120000 : 0o100000;
    const mode = type | (e.mode ?? (isDir ? 0o755 : e.link !== undefined ? 0o777 : 0o644));
    const crc = (crc32(raw) ^ (opts.corruptCrc === e.name ? 1 : 0)) >>> 0;
    const method = e.deflate ? 8 : 0;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(raw.length, 22);
    local.writeUInt16LE(name.length, 26);
    locals.push(local, name, body);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(raw.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE((mode << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

/** A stand-in Elasticsearch distribution, as its zip lays it out: `elasticsearch-V/bin/elasticsearch`, config, lib. */
export function fakeElasticsearchZip(version: string, opts: { jvmOptions?: string; plugins?: boolean; program?: string } = {}): Buffer {
  const top = `${opts.program ?? 'elasticsearch'}-${version}/`;
  return makeZip([
    { name: top },
    { name: `${top}bin/` },
    { name: `${top}bin/${opts.program ?? 'elasticsearch'}`, data: `#!/bin/sh\necho "Version: ${version}"\n`, mode: 0o755 },
    { name: `${top}config/` },
    { name: `${top}config/elasticsearch.yml`, data: '# cluster.name: my-application\n' },
    { name: `${top}config/jvm.options`, data: opts.jvmOptions ?? '-Xms1g\n-Xmx1g\n' },
    { name: `${top}lib/` },
    { name: `${top}lib/elasticsearch-${version}.jar`, data: Buffer.alloc(3 << 20, 7), deflate: true },
    ...(opts.plugins === false ? [] : [{ name: `${top}plugins/` }]),
  ]);
}
