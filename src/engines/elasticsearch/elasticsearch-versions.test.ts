import { describe, expect, it } from 'vitest';
import { dashboardsUse, elasticsearchRefusal, productOf } from './elasticsearch-versions.js';

const bin = (name: string, version: string, path = `/usr/share/${name}/bin/${name}`) => ({ name, path, version });

describe('productOf', () => {
  it('tells OpenSearch from Elasticsearch by the binary', () => {
    expect(productOf(bin('elasticsearch', '8.11.1'))).toBe('elasticsearch');
    expect(productOf(bin('opensearch', '2.11.0'))).toBe('opensearch');
    expect(productOf(bin('node', '2.11.0', '/opt/opensearch'))).toBe('opensearch');
  });
});

describe('elasticsearchRefusal', () => {
  it('accepts Elasticsearch 7.1 and newer, and OpenSearch', () => {
    expect(elasticsearchRefusal(bin('elasticsearch', '8.11.1'), false)).toBeUndefined();
    expect(elasticsearchRefusal(bin('elasticsearch', '7.1.0'), false)).toBeUndefined();
    expect(elasticsearchRefusal(bin('opensearch', '1.3.14'), false)).toBeUndefined();
  });

  it('refuses Elasticsearch without free security, saying why', () => {
    expect(elasticsearchRefusal(bin('elasticsearch', '6.8.23'), false)).toMatch(/6\.8\.23 is older than 7\.1\.0.*security/);
  });

  it('refuses either product where engines run as root (HANGAR_ENGINE_USER=root), which both refuse', () => {
    expect(elasticsearchRefusal(bin('elasticsearch', '8.11.1'), true)).toMatch(
      /elasticsearch refuses to run as root, and engines run as root here \(HANGAR_ENGINE_USER=root\)/,
    );
    expect(elasticsearchRefusal(bin('opensearch', '2.11.0'), true)).toMatch(/opensearch refuses to run as root/);
  });
});

describe('dashboardsUse', () => {
  const es = bin('elasticsearch', '8.11.1');
  const os = bin('opensearch', '2.11.0');

  it('runs Kibana of the same release series next to Elasticsearch, OpenSearch Dashboards next to OpenSearch', () => {
    expect(dashboardsUse(es, bin('kibana', '8.11.3'))).toMatchObject({ use: true, binary: { name: 'kibana' } });
    expect(dashboardsUse(os, bin('opensearch-dashboards', '2.11.1'))).toMatchObject({ use: true });
  });

  it('says why it does not, naming what to install', () => {
    expect(dashboardsUse(es, undefined)).toEqual({ use: false, reason: expect.stringMatching(/kibana was not found.*HANGAR_KIBANA_BIN/) });
    expect(dashboardsUse(os, undefined)).toEqual({ use: false, reason: expect.stringMatching(/opensearch-dashboards was not found/) });
    expect(dashboardsUse(es, bin('kibana', '8.10.4'))).toEqual({
      use: false,
      reason: expect.stringMatching(/kibana 8\.10\.4 does not work with elasticsearch 8\.11\.1: install kibana 8\.11/),
    });
    expect(dashboardsUse(es, bin('opensearch-dashboards', '8.11.1'))).toEqual({
      use: false,
      reason: expect.stringMatching(/install kibana/),
    });
    expect(dashboardsUse(os, bin('kibana', '2.11.0'))).toEqual({
      use: false,
      reason: expect.stringMatching(/install opensearch-dashboards/),
    });
    expect(dashboardsUse(bin('elasticsearch', '7.9.3'), bin('kibana', '7.9.3'))).toEqual({
      use: false,
      reason: expect.stringMatching(/older than 7\.10\.0/),
    });
  });
});
