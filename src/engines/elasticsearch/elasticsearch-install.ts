import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BuiltEngine } from '../install/engine-cache.js';
import type { InstallContext, InstallRecipe } from '../install/install-recipe.js';
import { type JavaRange, type JavaRuntime, chooseJava, findJavaRuntimes } from '../install/java-runtime.js';
import { MAVEN_CENTRAL, installZipDistribution } from '../install/zip-distribution.js';

/**
 * Elasticsearch and OpenSearch from Maven Central, and what each version needs to start on the
 * Java found here. Every version below was started by hand from this cache (read-only to the
 * node's user, root-owned) on OpenJDK 17.0.15, as an unprivileged user (both products refuse
 * root), single node on 127.0.0.1, 512 MB heap, each with a copy of the cached `config/` and its
 * own data and logs directories, until `/_cluster/health` said green. What each needed, for the
 * engine that will drive them:
 *
 * Every version:
 * - The Java home in the environment: JAVA_HOME (2.x to 7.10), ES_JAVA_HOME (7.17: JAVA_HOME
 *   still works there, with a deprecation warning on stderr), OPENSEARCH_JAVA_HOME (OpenSearch).
 *   The manifest's `env` holds it. The 7.x and OpenSearch integration-test zips carry no JDK
 *   (`bin/opensearch --version` fails without one) and print "warning: no-jdk distributions ...
 *   are deprecated" twice at each start: harmless.
 * - A config directory of its own per node, writable by the node's user: 6.x and later write
 *   `elasticsearch.keystore` (`opensearch.keystore`) into it at the first start.
 * - `path.data` and `path.logs` of the node's own; on loopback the bootstrap checks only warn
 *   (file descriptors under 65536, vm.max_map_count under 262144); bound to another address they
 *   would stop the node.
 * - config/jvm.options names `-XX:HeapDumpPath=data` and `-XX:ErrorFile=logs/hs_err_pid%p.log`,
 *   relative to the home (the 6.x and later scripts `cd` there): the node starts, but a heap dump
 *   or crash file would be written under the read-only home. The last occurrence of a -XX flag
 *   wins, so the engine can point both at the node's directories in ES_JAVA_OPTS (not tried).
 * - The 6.8, 7.x and OpenSearch jvm.options log GC to `logs/gc.log` under the home, and the JVM
 *   does not start when it cannot open it ("Error opening log file 'logs/gc.log': Permission
 *   denied"): those lines are commented out in the cache (see patchJvmOptions).
 *
 * 2.4.6 (green in 8-13 s):
 *   JAVA_HOME=<jdk> ES_GC_OPTS=-XX:+UseG1GC ES_HEAP_SIZE=512m bin/elasticsearch
 *     -Des.path.conf=<dir>/config -Des.path.data=<dir>/data -Des.path.logs=<dir>/logs
 *     -Des.http.port=<p> -Des.transport.tcp.port=<p> -Des.network.host=127.0.0.1
 *     -Des.cluster.name=<name> -Des.node.name=<name>
 *   Without ES_GC_OPTS its script passes -XX:+UseParNewGC, and Java 17 stops at once
 *   ("Unrecognized VM option 'UseParNewGC'"). The zip has no plugins/, which the node makes at
 *   start in its home ("Unable to access 'path.plugins'" when it cannot): the cache has an empty
 *   one. Its config is elasticsearch.yml and logging.yml (no jvm.options); settings go as `-Des.*`
 *   flags (or `--path.conf=...`); unicast discovery, so a lone node elects itself.
 *
 * 5.4.3, 5.5.1, 5.6.9 (green in 18-28 s):
 *   JAVA_HOME=<jdk> ES_JVM_OPTIONS=<dir>/config/jvm.options ES_JAVA_OPTS="-Xms512m -Xmx512m"
 *   bin/elasticsearch -Epath.conf=<dir>/config -Epath.data=<dir>/data -Epath.logs=<dir>/logs
 *     -Ehttp.port=<p> -Etransport.tcp.port=<p> -Enetwork.host=127.0.0.1 -Ecluster.name=<name>
 *     -Enode.name=<name>
 *   The script reads jvm.options from ES_JVM_OPTIONS (else the home's), not from path.conf. Its
 *   CMS lines stop Java 17 ("Unrecognized VM option 'UseConcMarkSweepGC'"): commented out in the
 *   cache, -XX:+UseG1GC added. The -Xms2g/-Xmx2g of jvm.options stay; ES_JAVA_OPTS comes after
 *   them and wins (the log says "heap size [512mb]").
 *
 * 6.1.2 (green in 25-29 s), 6.8.23 (72 s with X-Pack loading; oss 34 s):
 *   JAVA_HOME=<jdk> ES_PATH_CONF=<dir>/config ES_JAVA_OPTS="-Xms512m -Xmx512m" bin/elasticsearch
 *     -Epath.data=... -Epath.logs=... -Ehttp.port=<p> -Etransport.tcp.port=<p>
 *     -Enetwork.host=127.0.0.1 -Ecluster.name=<name> -Enode.name=<name>
 *   jvm.options is read from ES_PATH_CONF. 6.1.2's CMS lines are unconditional, as in 5.x (same
 *   change); 6.8.23 binds them to Java 8-13 (`8-13:`) and names G1 from 14 on. 6.8.23's default
 *   distribution reports build_flavor "default" (X-Pack, security off unless
 *   `xpack.security.enabled: true` with a keystore `bootstrap.password`), the oss one "oss".
 *
 * 7.10.2, 7.17.25 (green in 30 s and 42 s), the integration-test zips:
 *   ES_JAVA_HOME (7.17) or JAVA_HOME (7.10)=<jdk> ES_PATH_CONF=<dir>/config
 *   ES_JAVA_OPTS="-Xms512m -Xmx512m" bin/elasticsearch -Ediscovery.type=single-node
 *     -Epath.data=... -Epath.logs=... -Ehttp.port=<p> -Etransport.port=<p>
 *     -Enetwork.host=127.0.0.1 -Ecluster.name=<name> -Enode.name=<name>
 *   build_flavor "oss": no X-Pack, so any `xpack.*` setting stops the node.
 *
 * OpenSearch 2.19.1 (green in 36 s), the integration-test zip (no security plugin):
 *   OPENSEARCH_JAVA_HOME=<jdk> OPENSEARCH_PATH_CONF=<dir>/config
 *   OPENSEARCH_JAVA_OPTS="-Xms512m -Xmx512m" bin/opensearch -Ediscovery.type=single-node
 *     -Epath.data=... -Epath.logs=... -Ehttp.port=<p> -Etransport.port=<p>
 *     -Enetwork.host=127.0.0.1 -Ecluster.name=<name> -Enode.name=<name>
 *
 * Java: none of them runs on Java 24 or later, which removed the Security Manager they install at
 * start (Temurin 25: 7.10.2 stops with "UnsupportedOperationException: Setting a Security Manager
 * is not supported", 7.17.25 with "Enabling a Security Manager is not supported", OpenSearch too).
 * Java 18 to 23 need `-Djava.security.manager=allow`, which 7.17 and OpenSearch 2.x pass
 * themselves; hence the ranges below (Java 21 not tried: none here).
 *
 * The times were taken with the machine's 2 cores under a load of 12 to 15 (other work running);
 * on a quiet machine of this kind the same versions were green in 4 to 10 s.
 */

/** One distribution hangar installs. */
interface Distribution {
  readonly version: string;
  /** Its zip, under the Maven repository's root. */
  readonly path: string;
  /** Java versions it runs on (verified on 17). */
  readonly java: JavaRange;
  /** The variable its scripts read the Java home from (7.17 prefers ES_JAVA_HOME, OpenSearch OPENSEARCH_JAVA_HOME). */
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
  // its script's default collector flags name ParNew, gone from Java 10 on; ES_GC_OPTS replaces them
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
        await mkdir(join(ctx.dir, 'plugins'));
        await chmod(join(ctx.dir, 'plugins'), 0o755);
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
