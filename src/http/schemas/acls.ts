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
  expires_at: Type.Optional(Type.String({ description: 'When it stops admitting (RFC 3339, UTC); absent: never (an addition to the ObjectRocket API)' })),
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
