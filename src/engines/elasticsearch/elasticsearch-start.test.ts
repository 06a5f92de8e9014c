import { describe, expect, it } from 'vitest';
import { startFailure } from './elasticsearch-start.js';

// What real nodes wrote when they stopped at start on this machine (OpenJDK 17, as the engine
// user), trimmed of repeated warnings and most stack frames.

const ES_7_10_UNKNOWN_SETTING = `warning: no-jdk distributions that do not bundle a JDK are deprecated and will be removed in a future release
WARNING: A terminally deprecated method in java.lang.System has been called
WARNING: System::setSecurityManager has been called by org.elasticsearch.bootstrap.Elasticsearch (file:/var/cache/hangar/engines/elasticsearch/7.10.2/lib/elasticsearch-7.10.2.jar)
[2026-12-07T22:51:46,952][INFO ][o.e.n.Node               ] [vm] version[7.10.2], pid[31516], build[oss/zip/747e1cc71def077253878a59143c1f785afa92b9/2021-01-13T00:42:12.435326Z]
[2026-12-07T22:51:48,741][INFO ][o.e.n.Node               ] [vm] node name [vm], node ID [mjtdMmtGT9-yAi7eSwskpQ], cluster name [elasticsearch], roles [master, remote_cluster_client, data, ingest]
[2026-12-07T22:51:51,877][ERROR][o.e.b.ElasticsearchUncaughtExceptionHandler] [vm] uncaught exception in thread [main]
org.elasticsearch.bootstrap.StartupException: java.lang.IllegalArgumentException: unknown setting [xpack.security.enabled] please check that any required plugins are installed, or check the breaking changes documentation for removed settings
	at org.elasticsearch.bootstrap.Elasticsearch.init(Elasticsearch.java:174) ~[elasticsearch-7.10.2.jar:7.10.2]
	at org.elasticsearch.bootstrap.Elasticsearch.execute(Elasticsearch.java:161) ~[elasticsearch-7.10.2.jar:7.10.2]
Caused by: java.lang.IllegalArgumentException: unknown setting [xpack.security.enabled] please check that any required plugins are installed, or check the breaking changes documentation for removed settings
	at org.elasticsearch.common.settings.AbstractScopedSettings.validate(AbstractScopedSettings.java:544) ~[elasticsearch-7.10.2.jar:7.10.2]
	... 6 more
uncaught exception in thread [main]
java.lang.IllegalArgumentException: unknown setting [xpack.security.enabled] please check that any required plugins are installed, or check the breaking changes documentation for removed settings
For complete error details, refer to the log at /tmp/esfail/l710/elasticsearch.log
`;

const ES_5_6_UNKNOWN_SETTING = `WARNING: A terminally deprecated method in java.lang.System has been called
[2026-12-07T22:52:17,721][INFO ][o.e.n.Node               ] [] initializing ...
[2026-12-07T22:52:23,892][INFO ][o.e.p.PluginsService     ] [bRyOLYZ] no plugins loaded
[2026-12-07T22:52:28,624][WARN ][o.e.b.ElasticsearchUncaughtExceptionHandler] [] uncaught exception in thread [main]
org.elasticsearch.bootstrap.StartupException: java.lang.IllegalArgumentException: unknown setting [bogus.setting] please check that any required plugins are installed, or check the breaking changes documentation for removed settings
	at org.elasticsearch.bootstrap.Elasticsearch.init(Elasticsearch.java:136) ~[elasticsearch-5.6.9.jar:5.6.9]
Caused by: java.lang.IllegalArgumentException: unknown setting [bogus.setting] please check that any required plugins are installed, or check the breaking changes documentation for removed settings
	... 6 more
`;

const ES_2_4_PORT_TAKEN = `WARNING: System::setSecurityManager will be removed in a future release
[2026-12-07 22:52:35,688][WARN ][env                      ] [Agent X] max file descriptors [20000] for elasticsearch process likely too low, consider increasing to at least [65536]
[2026-12-07 22:52:41,592][INFO ][node                     ] [Agent X] starting ...
Exception in thread "main" BindTransportException[Failed to bind to [29399]]; nested: ChannelException[Failed to bind to: /127.0.0.1:29399]; nested: BindException[Address already in use];
Likely root cause: java.net.BindException: Address already in use
	at sun.nio.ch.Net.bind0(Native Method)
Refer to the log for complete error details.
[2026-12-07 22:52:41,953][INFO ][node                     ] [Agent X] stopping ...
[2026-12-07 22:52:41,959][INFO ][node                     ] [Agent X] closed
`;

const JVM_REFUSES_OPTION = `Unrecognized VM option 'UseParNewGC'
Error: Could not create the Java Virtual Machine.
Error: A fatal exception has occurred. Program will exit.
`;

const ES_6_1_ON_JAVA_25 = `grep: /var/cache/hangar/engines/elasticsearch/6.1.2/config/jvm.options: Permission denied
Exception in thread "main" java.lang.UnsupportedOperationException: Setting a Security Manager is not supported
	at java.base/java.lang.System.setSecurityManager(System.java:286)
`;

const ES_5_6_LOG4J_STATUS_FIRST = `WARNING: System::setSecurityManager will be removed in a future release
Exception in thread "main" 2026-12-07 22:51:56,501 main ERROR No log4j2 configuration file found. Using default configuration: logging only errors to the console.
2026-12-07 22:51:57,222 main ERROR Could not register mbeans java.security.AccessControlException: access denied ("javax.management.MBeanTrustPermission" "register")
	at java.base/java.security.AccessControlContext.checkPermission(AccessControlContext.java:485)

SettingsException[Failed to load settings from /var/cache/hangar/engines/elasticsearch/5.6.9/config/elasticsearch.yml]; nested: AccessDeniedException[/var/cache/hangar/engines/elasticsearch/5.6.9/config/elasticsearch.yml];
Caused by: java.nio.file.AccessDeniedException: /var/cache/hangar/engines/elasticsearch/5.6.9/config/elasticsearch.yml
`;

const UNKNOWN_SETTING = /^unknown setting \[xpack\.security\.enabled\] please check that any required plugins are installed/;

describe('startFailure', () => {
  it('gives the message of the exception an ERROR line announces, without its classes (7.x)', () => {
    expect(startFailure(ES_7_10_UNKNOWN_SETTING)).toMatch(UNKNOWN_SETTING);
  });

  it('finds it where the announcement is at WARN (5.x)', () => {
    expect(startFailure(ES_5_6_UNKNOWN_SETTING)).toMatch(/^unknown setting \[bogus\.setting\]/);
  });

  it('reads the line of a failure the JVM prints itself, before its stack (2.x, Java 25)', () => {
    expect(startFailure(ES_2_4_PORT_TAKEN)).toMatch(/^BindTransportException\[Failed to bind to \[29399\]\].*Address already in use/);
    expect(startFailure(ES_6_1_ON_JAVA_25)).toBe('Setting a Security Manager is not supported');
    expect(startFailure(JVM_REFUSES_OPTION)).toBe("Unrecognized VM option 'UseParNewGC'");
  });

  it("passes over log4j's own status lines to the exception", () => {
    expect(startFailure(ES_5_6_LOG4J_STATUS_FIRST)).toMatch(/^SettingsException\[Failed to load settings from .*elasticsearch\.yml\]/);
  });

  it('never answers with a stack frame, and says the last line when nothing else is said', () => {
    for (const out of [ES_7_10_UNKNOWN_SETTING, ES_5_6_UNKNOWN_SETTING, ES_2_4_PORT_TAKEN, ES_6_1_ON_JAVA_25]) {
      expect(startFailure(out)).not.toMatch(/^\s*at |\.java:\d+\)/);
    }
    expect(startFailure('[2026-12-07T22:51:46,952][INFO ][o.e.n.Node] [vm] starting ...\nkilled\n')).toBe('killed');
    expect(startFailure('')).toBeUndefined();
  });
});
