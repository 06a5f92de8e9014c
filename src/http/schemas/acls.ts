import { Type, type Static } from 'typebox';
import { DateRef, InstanceNameParam, ObjectIdRef } from './common.js';
import { ACL, ACL_EXTENDED } from './examples.js';

export const AclCreateBody = Type.Object(
  {
    cidr_mask: Type.String({ description: 'An IP address (a.b.c.d) or a CIDR range (a.b.c.d/x), IPv4 or IPv6' }),
    description: Type.String({ description: 'What the address is, for people (at most 256 characters)' }),
    transport: Type.Optional(Type.Boolean({ description: 'elasticsearch only: also admit on the transport port; not with kibana' })),
    kibana: Type.Optional(Type.Boolean({ description: 'elasticsearch only: admit on Kibana instead; not with transport' })),
    expires_at: Type.Optional(
      Type.String({
        description:
          'When the ACL stops admitting, an RFC 3339 date-time in the future (an addition to the ObjectRocket API): the edge then refuses the source and closes its open connections, the ACL leaves the list, and the audit log records `acl.expire`',
      }),
    ),
  },
  {
    additionalProperties: false,
    examples: [
      { cidr_mask: '203.0.113.7', description: 'laptop' },
      { cidr_mask: '198.51.100.0/24', description: 'office', transport: true },
      { cidr_mask: '192.0.2.44', description: 'contractor, this week', expires_at: '2026-12-04T18:00:00Z' },
    ],
  },
);
export type AclCreateBody = Static<typeof AclCreateBody>;

const aclFields = {
  _cls: Type.Literal('Acl', { description: 'Always "Acl"' }),
  _id: ObjectIdRef,
  cidr_mask: Type.String({ description: 'The address or range admitted' }),
  date_created: DateRef,
  description: Type.String({ description: 'What the address is, for people' }),
  instance: Type.String({ description: 'The instance name' }),
  login: Type.String({ description: 'Login of the owning account' }),
  metadata: Type.Object({}, { description: 'Always empty' }),
  port: Type.Integer({ description: "The instance's public port" }),
  transport: Type.Optional(Type.Boolean({ description: 'elasticsearch: also admitted on the transport port' })),
  kibana: Type.Optional(Type.Boolean({ description: 'elasticsearch: admitted on Kibana' })),
  expires_at: Type.Optional(
    Type.String({ description: 'When it stops admitting (RFC 3339, UTC); absent: never (an addition to the ObjectRocket API)' }),
  ),
};

export const AclRecord = Type.Object(aclFields, { $id: 'Acl', description: 'An ACL (spec 2.4)', examples: [ACL] });
export const AclRecordExtended = Type.Object(
  {
    ...aclFields,
    instance_id: ObjectIdRef,
    instance_type: Type.String({ description: 'The instance type' }),
    service_type: Type.String({ description: 'The instance service' }),
  },
  { $id: 'AclExtended', description: 'An ACL with its instance (spec 2.4, single-ACL response)', examples: [ACL_EXTENDED] },
);

export const AclParams = Type.Object({
  instance_name: InstanceNameParam,
  acl_id: Type.String({ description: 'The ACL id (its _id.$oid)', examples: [ACL._id.$oid] }),
});

/** The whole list, for `PUT .../acls/`. */
export const AclReplaceBody = Type.Array(AclCreateBody, {
  maxItems: 1000,
  description: 'Every ACL the instance is to have; those it has and the list leaves out are removed',
  examples: [
    [
      { cidr_mask: '203.0.113.7', description: 'laptop' },
      { cidr_mask: '198.51.100.0/24', description: 'office', expires_at: '2026-12-31T23:59:59Z' },
    ],
  ],
});

export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      description:
        'The ETag of the list as last read (GET .../acls/ answers it); a list that changed since is a 412. Left out: replace whatever the list is',
    }),
  ),
});

export const AclCheckBody = Type.Object(
  { ip: Type.String({ description: 'An IPv4 or IPv6 address (not a range)' }) },
  { additionalProperties: false, examples: [{ ip: '198.51.100.23' }] },
);

export const AclCheckRecord = Type.Object(
  {
    ip: Type.String({ description: 'The address, normalised' }),
    admitted: Type.Boolean({
      description: "Whether the edge admits it on the instance's client listeners (hangar's own probe address aside)",
    }),
    acl: Type.Union([AclRecord, Type.Null()], { description: 'The ACL that admits it, the most specific one; null when none does' }),
  },
  { description: 'Whether an address would be admitted, and by which ACL' },
);

const Sources = Type.Object(
  {
    main: Type.Optional(Type.Array(Type.String(), { description: 'Client listeners (all of them but the two below)' })),
    transport: Type.Optional(Type.Array(Type.String(), { description: 'elasticsearch: transport listeners' })),
    kibana: Type.Optional(Type.Array(Type.String(), { description: 'elasticsearch: Kibana listeners' })),
  },
  { additionalProperties: false, description: 'Sources admitted, per group of listeners' },
);

export const EffectiveAccessRecord = Type.Object(
  {
    in_sync: Type.Boolean({ description: 'Whether every enforcer admits exactly what the ACLs in the store say' }),
    desired: Sources,
    enforcers: Type.Array(
      Type.Object({
        name: Type.String({
          description: 'What enforces: haproxy (the local edge), pod/<name> (an edge pod), networkpolicy/<name>, emulated',
        }),
        sources: Sources,
        in_sync: Type.Boolean({ description: 'Whether it admits exactly the desired sources' }),
        missing: Sources,
        extra: Sources,
        problem: Type.Optional(Type.String({ description: 'Why it could not be read (not running)' })),
      }),
    ),
    checked_at: Type.String({ description: 'When it was read (RFC 3339, UTC)' }),
  },
  { description: 'The rules the edge runs now, read from it, against the store' },
);

export const DeniedConnectionRecord = Type.Object(
  {
    source: Type.String({ description: 'The address refused' }),
    time: Type.String({ description: 'When (RFC 3339, UTC, milliseconds)' }),
    listener: Type.String({ description: 'The listener it tried: public, servicenet, ...' }),
  },
  { description: 'A connection the edge refused (its source is in no ACL)' },
);

export const DeniedQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.String({
        pattern: '^[0-9]{1,3}$',
        description: 'How many, 1-100, default 20 (the edge keeps the last 100 per instance)',
        examples: ['20'],
      }),
    ),
  },
  { additionalProperties: false },
);
