import { describe, expect, it } from 'vitest';
import { cliWord, parseShowAcl, parseShowProc, parseShowSess, parseShowStat } from './haproxy-socket.js';

// Answers as HAProxy 2.6 prints them.

describe('parseShowProc', () => {
  it('tells the master, the current worker and old workers apart', () => {
    const text = [
      '#<PID>          <type>          <reloads>       <uptime>        <version>      ',
      '12044           master          2 [failed: 1]   0d00h00m14s     2.6.12-1+deb12u4',
      '# workers',
      '12205           worker          0               0d00h00m07s     2.6.12-1+deb12u4',
      '# old workers',
      '12047           worker          1               0d00h00m07s     2.6.12-1+deb12u4',
      '# programs',
      '',
    ].join('\n');
    expect(parseShowProc(text)).toEqual([
      { pid: 12044, type: 'master', reloads: 2, failed: 1 },
      { pid: 12205, type: 'worker', reloads: 0, failed: 0 },
      { pid: 12047, type: 'old-worker', reloads: 1, failed: 0 },
    ]);
  });
});

describe('parseShowSess', () => {
  it('lists client sessions with their frontend and source address, not CLI sessions', () => {
    const text = [
      '0x7f8008037ef0: proto=tcpv4 src=127.0.0.1:60078 fe=i-abc-public be=e-abc-engine.primary srv=engine ts=00 epoch=0 age=2s calls=2',
      '0x7f8008037f00: proto=tcpv6 src=::1:41000 fe=i-abc-servicenet be=e-abc-engine.primary srv=engine ts=00',
      '0x7f8008044f30: proto=sockpair src=unix:2 fe=GLOBAL be=<NONE> srv=<none> ts=00 epoch=0 age=0s calls=1',
      '',
    ].join('\n');
    expect(parseShowSess(text)).toEqual([
      { id: '0x7f8008037ef0', frontend: 'i-abc-public', source: '127.0.0.1' },
      { id: '0x7f8008037f00', frontend: 'i-abc-servicenet', source: '::1' },
    ]);
  });
});

describe('parseShowAcl', () => {
  it('reads entry references and patterns', () => {
    expect(parseShowAcl('0x7f8008044710 127.0.0.1\n0x55c96601aa80 10.0.0.0/8\n\n')).toEqual([
      { ref: '0x7f8008044710', pattern: '127.0.0.1' },
      { ref: '0x55c96601aa80', pattern: '10.0.0.0/8' },
    ]);
  });
});

describe('parseShowStat', () => {
  it('takes admitted sessions and refused connections of frontends (a refusal by a content rule is a session with a denied request)', () => {
    const header =
      '# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,throttle,lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,check_duration,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,hrsp_other,hanafail,req_rate,req_rate_max,req_tot,cli_abrt,srv_abrt,comp_in,comp_out,comp_byp,comp_rsp,lastsess,last_chk,last_agt,qtime,ctime,rtime,ttime,agent_status,agent_code,agent_duration,check_desc,agent_desc,check_rise,check_fall,check_health,agent_rise,agent_fall,agent_health,addr,cookie,mode,algo,conn_rate,conn_rate_max,conn_tot,intercepted,dcon,dses';
    const cols = header.slice(2).split(',');
    const row = (values: Record<string, string>) => cols.map((c) => values[c] ?? '').join(',');
    const text = [
      header,
      row({ pxname: 'i-abc-public', svname: 'FRONTEND', stot: '7', dreq: '5', dcon: '3', dses: '1' }),
      row({ pxname: 'e-abc-engine.primary', svname: 'engine', stot: '2' }),
      row({ pxname: 'e-abc-engine.primary', svname: 'BACKEND', stot: '2' }),
      '',
    ].join('\n');
    expect(parseShowStat(text)).toEqual([{ frontend: 'i-abc-public', admitted: 2, refused: 9 }]);
  });
});

describe('cliWord', () => {
  it('escapes what the CLI would split on', () => {
    expect(cliWord('/data dir/a;b\\c')).toBe('/data\\ dir/a\\;b\\\\c');
  });
});
