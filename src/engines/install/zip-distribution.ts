import { existsSync, statSync } from 'node:fs';
import { readdir, rename, rm, rmdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertSha1, download, hashFile, parseSha1, publishedSha1, sha1Beside } from './download.js';
import type { EngineSource } from './engine-manifest.js';
import type { InstallContext } from './install-recipe.js';
import { unzip } from './unzip.js';

/** Maven Central, where Elasticsearch and OpenSearch publish their zip distributions with a `.sha1` beside each. */
export const MAVEN_CENTRAL = 'https://repo1.maven.org/maven2';

const isUrl = (s: string) => /^https?:\/\//i.test(s);

/** Where the zip comes from: the publisher's URL, a mirror's, a file's URL, or a local file. */
export function zipSource(from: string | undefined, base: string, path: string): { url: string } | { file: string } {
  if (from === undefined) return { url: `${base}/${path}` };
  if (/^file:\/\//i.test(from)) return { file: fileURLToPath(from) };
  if (isUrl(from)) return /\.zip$/i.test(new URL(from).pathname) ? { url: from } : { url: `${from.replace(/\/+$/, '')}/${path}` };
  return { file: resolve(from) };
}

/**
 * Fetches a zip distribution into `ctx.dir`, checks it against its published SHA-1 and unpacks
 * it there, the archive's single top directory (`elasticsearch-6.8.23/`) left out. The SHA-1
 * expected is `--sha1` when given, else the one the recipe pins (`pinned`, for a file published
 * without one); else for a download the `.sha1` beside it (on the mirror for
 * a mirror); for a local file the `.sha1` beside it, else the publisher's `.sha1` at `base`.
 * A mismatch installs nothing (ChecksumMismatchError, naming both sums).
 */
export async function installZipDistribution(
  ctx: InstallContext,
  base: string,
  path: string,
  pinned?: { readonly sha1: string; readonly from: string },
): Promise<EngineSource> {
  const where = zipSource(ctx.from, base, path);
  const given = ctx.sha1 === undefined ? pinned : { sha1: parseSha1(ctx.sha1, '--sha1'), from: '--sha1' };
  let source: EngineSource;
  let zip: string;
  if ('url' in where) {
    const expected = given ?? (await publishedSha1(where.url));
    zip = join(ctx.dir, '.download.zip');
    ctx.progress.step(`downloading ${where.url}`);
    const got = await download(where.url, zip, (done, total) => ctx.progress.amount(done, total, 'bytes'));
    assertSha1(where.url, got.sha1, expected);
    source = { kind: 'download', url: where.url, sha1: got.sha1, sha1From: expected.from, sha256: got.sha256 };
  } else {
    zip = where.file;
    if (!existsSync(zip) || !statSync(zip).isFile()) throw new Error(`--from ${ctx.from}: no such file`);
    const expected = given ?? (await sha1Beside(zip)) ?? (await publishedSha1(`${base}/${path}`));
    ctx.progress.step(`checking ${zip}`);
    const got = await hashFile(zip);
    assertSha1(zip, got.sha1, expected);
    source = { kind: 'file', file: zip, sha1: got.sha1, sha1From: expected.from, sha256: got.sha256 };
  }
  ctx.progress.step('unpacking');
  const unpack = join(ctx.dir, '.unpack');
  await unzip(zip, unpack, (done, total) => ctx.progress.amount(done, total, 'files'));
  if (zip.startsWith(ctx.dir)) await rm(zip, { force: true });
  // the archive's one top directory becomes the install directory
  const top = await readdir(unpack, { withFileTypes: true });
  const inner = top.length === 1 && top[0]!.isDirectory() ? join(unpack, top[0]!.name) : unpack;
  for (const name of await readdir(inner)) await rename(join(inner, name), join(ctx.dir, name));
  if (inner !== unpack) await rmdir(inner);
  await rmdir(unpack);
  return source;
}
