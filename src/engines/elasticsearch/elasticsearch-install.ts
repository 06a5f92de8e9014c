import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BuiltEngine } from '../install/engine-cache.js';
import type { InstallContext, InstallRecipe } from '../install/install-recipe.js';
import { type JavaRange, type JavaRuntime, chooseJava, findJavaRuntimes } from '../install/java-runtime.js';
import { MAVEN_CENTRAL, installZipDistribution } from '../install/zip-distribution.js';

/**
 * Elasticsearch and OpenSearch from Maven Central, and what each version needs to start on the
 * Java found here. Every version below was started by hand on OpenJDK 17 as an unprivileged user
 * (both products refuse root), single node, 512 MB heap, until `/_cluster/health` said green.
 * What each needed, for the engine that will drive them:
 *
 * FACTS
 */

/** One distribution hangar installs. */
interface Distribution {
  readonly version: string;
  /** Its zip, under the Maven repository's root. */
  readonly path: string;
  /** Java versions it runs on (verified on 17). */
  readonly java: JavaRange;
  /** The variable its scripts read the Java home from (ES 7.12 on prefer ES_JAVA_HOME, OpenSearch OPENSEARCH_JAVA_HOME). */
  readonly javaHomeVar: string;
  /** More environment it needs at every start. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The SHA-1 to expect when the publisher put none beside the file: the one of the file as
   * downloaded when this version was verified to start (the same bytes each time, not the
   * publisher's word).
   */
  readonly pinnedSha1?: string;
  /** config/jvm.options names the CMS collector, which the JVM refuses from Java 14 on: those lines are commented out. */
  readonly withoutCms?: boolean;
  readonly program: string;
}

const zip = (group: string, artifact: string, version: string) =>
  `${group.replace(/\./g, '/')}/${artifact}/${version}/${artifact}-${version}.zip`;
const es = (version: string, java: JavaRange, extra: Partial<Distribution> = {}): Distribution => ({
  version,
  path: zip('org.elasticsearch.distribution.zip', 'elasticsearch', version),
  java,
  javaHomeVar: 'JAVA_HOME',
  program: 'bin/elasticsearch',
  ...extra,
});

const UP_TO_17 = { min: 8, max: 17 };

const ELASTICSEARCH: readonly Distribution[] = [
  // its default collector flags (ParNew) are gone from Java 9 on; ES_GC_OPTS replaces them
  es('2.4.6', UP_TO_17, { env: { ES_GC_OPTS: '-XX:+UseG1GC' } }),
  es('5.4.3', UP_TO_17, { withoutCms: true }),
  es('5.5.1', UP_TO_17, { withoutCms: true }),
  es('5.6.9', UP_TO_17, { withoutCms: true }),
  // Maven Central serves this zip but no .sha1, .md5 or .pom beside it (and its maven-metadata.xml
  // does not list 6.1.2): its SHA-1 is pinned, from the download of 2026-12-07 that started green
  es('6.1.2', UP_TO_17, { pinnedSha1: '8e01a72d763d3ffd1cf489d5d16a32e3abd4853a', withoutCms: true }),
  // the default distribution: X-Pack (basic license) inside
  es('6.8.23', UP_TO_17),
  // the integration-test zips: no X-Pack and no JDK of their own
  es('7.10.2', { min: 11, max: 17 }, { path: zip('org.elasticsearch.distribution.integ-test-zip', 'elasticsearch', '7.10.2') }),
  es(
    '7.17.25',
    { min: 11, max: 21 },
    {
      path: zip('org.elasticsearch.distribution.integ-test-zip', 'elasticsearch', '7.17.25'),
      javaHomeVar: 'ES_JAVA_HOME',
    },
  ),
];

const ELASTICSEARCH_OSS: readonly Distribution[] = [
  es('6.8.23', UP_TO_17, { path: zip('org.elasticsearch.distribution.zip', 'elasticsearch-oss', '6.8.23') }),
];

const OPENSEARCH: readonly Distribution[] = [
  {
    version: '2.19.1',
    path: zip('org.opensearch.distribution.integ-test-zip', 'opensearch', '2.19.1'),
    java: { min: 11, max: 21 },
    javaHomeVar: 'OPENSEARCH_JAVA_HOME',
    program: 'bin/opensearch',
  },
];

const NOT_ON_CENTRAL = 'is not published on Maven Central (neither the zip nor the oss zip)';
const REFUSED_ES: Readonly<Record<string, string>> = {
  '5.2.2': 'fails at bootstrap on Java 11 and 17 ("IllegalStateException: No match found")',
  '6.3.2': NOT_ON_CENTRAL,
  '6.4.1': NOT_ON_CENTRAL,
};

const CMS = /^-XX:[+-]?(?:UseConcMarkSweepGC|UseParNewGC|CMS\w+|UseCMS\w+)(?:=.*)?$/;
/** GC logging into `logs/gc.log`, relative to the distribution's home, where the scripts `cd`. */
const GC_LOG = /^(?:\d+-?\d*:)?-Xlog(?:gc)?:.*\blogs\/gc\.log\b/;

/**
 * The changes a distribution's config/jvm.options needs on Java 17 in a shared, read-only home:
 * `cms` comments out the CMS collector's lines (unconditional in 5.x and 6.1; the JVM refuses
 * them from Java 14 on: "Unrecognized VM option 'UseConcMarkSweepGC'") and names G1; `gcLog`
 * comments out the GC log into `logs/gc.log`, which the scripts resolve under the home (they `cd`
 * there) and the JVM refuses to start without ("Error opening log file 'logs/gc.log': Permission
 * denied"). Returns the new text and a line per change, or undefined when nothing changed.
 */
export function patchJvmOptions(text: string, what: { cms?: boolean; gcLog?: boolean }): { text: string; patches: string[] } | undefined {
  const patches = new Set<string>();
  const lines = text.split('\n').flatMap((line) => {
    const l = line.trim();
    if (what.cms && CMS.test(l)) {
      const first = !patches.has('cms');
      patches.add('cms');
      const out = `# ${l}   (hangar: the CMS collector is gone from Java 14 on)`;
      return first ? ['-XX:+UseG1GC', out] : [out];
    }
    if (what.gcLog && GC_LOG.test(l)) {
      patches.add('gc-log');
      return [`# ${l}   (hangar: not in the shared home; an instance logs GC in its own directory if it wants)`];
    }
    return [line];
  });
  if (patches.size === 0) return undefined;
  return {
    text: lines.join('\n'),
    patches: [
      ...(patches.has('cms') ? ['config/jvm.options: the CMS collector lines commented out, -XX:+UseG1GC added'] : []),
      ...(patches.has('gc-log') ? ['config/jvm.options: the GC log to logs/gc.log (under the read-only home) commented out'] : []),
    ],
  };
}

function recipe(
  product: string,
  summary: string,
  distributions: readonly Distribution[],
  refused: Readonly<Record<string, string>>,
): InstallRecipe {
  const find = (version: string): Distribution => {
    const d = distributions.find((x) => x.version === version);
    if (!d) throw new Error(`${product} ${version} is not one hangar installs`);
    return d;
  };
  const java = (ctx: Pick<InstallContext, 'env' | 'jvmDir' | 'version'>): JavaRuntime =>
    chooseJava(findJavaRuntimes(ctx.env, ctx.jvmDir), find(ctx.version).java, `${product} ${ctx.version}`);
  return {
    product,
    summary,
    versions: distributions.map((d) => d.version),
    refused,
    from: `a Maven repository's base URL (a mirror of ${MAVEN_CENTRAL}), the zip's URL, or a local zip`,
    async preflight(ctx) {
      java(ctx);
    },
    async install(ctx): Promise<BuiltEngine> {
      const d = find(ctx.version);
      const runtime = java(ctx);
      ctx.progress.note(`Java ${runtime.version} at ${runtime.home} (found by ${runtime.foundBy})`);
      const source = await installZipDistribution(
        ctx,
        MAVEN_CENTRAL,
        d.path,
        d.pinnedSha1 ? { sha1: d.pinnedSha1, from: 'pinned by hangar (Maven Central publishes no .sha1 for this file)' } : undefined,
      );
      const patches: string[] = [];
      const jvmOptions = join(ctx.dir, 'config', 'jvm.options');
      if (existsSync(jvmOptions)) {
        const patched = patchJvmOptions(await readFile(jvmOptions, 'utf8'), { cms: d.withoutCms, gcLog: true });
        if (patched) {
          await writeFile(jvmOptions, patched.text);
          patches.push(...patched.patches);
        }
      }
      // 2.x has no plugins/ and makes it at start, in a home its user cannot write
      if (!existsSync(join(ctx.dir, 'plugins'))) {
        await mkdir(join(ctx.dir, 'plugins'), { mode: 0o755 });
        patches.push('plugins/ created, empty (the node makes it at start otherwise)');
      }
      return {
        program: d.program,
        source,
        java: { home: runtime.home, version: runtime.version },
        env: { [d.javaHomeVar]: runtime.home, ...d.env },
        patches,
      };
    },
  };
}

export const ELASTICSEARCH_INSTALL = recipe(
  'elasticsearch',
  'Elasticsearch, zip distributions from Maven Central (6.8.23 with X-Pack; 7.x integration-test zips, without)',
  ELASTICSEARCH,
  REFUSED_ES,
);
export const ELASTICSEARCH_OSS_INSTALL = recipe(
  'elasticsearch-oss',
  'Elasticsearch OSS (Apache 2.0, no X-Pack) from Maven Central',
  ELASTICSEARCH_OSS,
  {
    '6.3.2': NOT_ON_CENTRAL,
    '6.4.1': NOT_ON_CENTRAL,
  },
);
export const OPENSEARCH_INSTALL = recipe(
  'opensearch',
  'OpenSearch, the integration-test zip (no security plugin) from Maven Central',
  OPENSEARCH,
  {},
);
