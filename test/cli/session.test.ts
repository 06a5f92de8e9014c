import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NotLoggedInError, UsageError } from '../../src/cli/io.js';
import { configDir, connect, forgetToken, loadSession, normalizeUrl, saveSession } from '../../src/cli/session.js';

describe('the session kept by hangar login', () => {
  const dirs: string[] = [];
  const home = () => {
    const d = mkdtempSync(join(tmpdir(), 'hangar-session-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('lives in $XDG_CONFIG_HOME/hangar, else ~/.config/hangar (a relative XDG_CONFIG_HOME is ignored, as the spec says)', () => {
    expect(configDir({ XDG_CONFIG_HOME: '/x/cfg', HOME: '/home/u' })).toBe('/x/cfg/hangar');
    expect(configDir({ HOME: '/home/u' })).toBe('/home/u/.config/hangar');
    expect(configDir({ XDG_CONFIG_HOME: 'cfg', HOME: '/home/u' })).toBe('/home/u/.config/hangar');
  });

  it('is written 0600 in a 0700 directory; logout keeps the URL and login but not the token', () => {
    const env = { HOME: home() };
    const file = saveSession(env, {
      url: 'http://127.0.0.1:8080',
      login: 'me@example.com',
      token: 't0k3n',
      token_expires: '2026-11-22 09:00:00',
    });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(configDir(env)).mode & 0o777).toBe(0o700);
    forgetToken(env);
    expect(loadSession(env)).toEqual({ url: 'http://127.0.0.1:8080', login: 'me@example.com' });
    expect(readFileSync(file, 'utf8')).not.toContain('t0k3n');
  });

  it('gives its token to its own hangar only', () => {
    const env = { HOME: home() };
    saveSession(env, { url: 'http://127.0.0.1:8080', token: 't0k3n' });
    expect(connect(env, undefined).client.token).toBe('t0k3n');
    expect(connect(env, 'http://127.0.0.1:8080/v2/').client.token).toBe('t0k3n');
    expect(() => connect(env, 'https://elsewhere.example.com')).toThrow(NotLoggedInError);
    expect(connect({ ...env, HANGAR_TOKEN: 'other' }, 'https://elsewhere.example.com').client.token).toBe('other');
    expect(connect({ ...env, HANGAR_LOGIN: 'me', HANGAR_PASSWORD: 'pw' }, 'https://elsewhere.example.com').client.token).toBeUndefined();
  });

  it('URLs: a trailing slash or /v2 is dropped; anything but http(s) is a usage error', () => {
    expect(normalizeUrl('http://127.0.0.1:8080/')).toBe('http://127.0.0.1:8080');
    expect(normalizeUrl('https://hangar.example.com/v2')).toBe('https://hangar.example.com');
    expect(() => normalizeUrl('ftp://x')).toThrow(UsageError);
    expect(() => normalizeUrl('127.0.0.1:8080')).toThrow(UsageError);
  });
});
