import { Type, type TSchema } from 'typebox';

const Allowed = Type.Array(Type.Union([Type.String(), Type.Number()]), { description: 'The values the field accepts' });

/** One problem of a request, as an error's `errors` lists it. */
export const ProblemBody = Type.Object({
  message: Type.String({ description: 'What is wrong, for people' }),
  code: Type.String({ description: 'Stable machine-readable name, e.g. INVALID_VALUE' }),
  field: Type.Optional(Type.String({ description: 'The request field at fault (`acls[0].cidr_mask`), when one is' })),
  allowed: Type.Optional(Allowed),
});

/** The body of every error response; the OpenAPI document references it as `Error`. */
export const ErrorBody = Type.Object(
  {
    message: Type.String({ description: 'What went wrong, for people' }),
    code: Type.String({ description: 'Stable machine-readable name, e.g. INSTANCE_NOT_FOUND' }),
    field: Type.Optional(Type.String({ description: 'The request field at fault' })),
    allowed: Type.Optional(Allowed),
    errors: Type.Optional(
      Type.Array(ProblemBody, {
        description:
          'On a 400: every problem found in the request at once (at most 50), the first being the one of `message`, `code` and `field`',
      }),
    ),
  },
  { $id: 'Error', description: 'Every error response' },
);

/** Error responses reference the shared `Error` schema (registered with `app.addSchema`). */
export const ErrorRef = Type.Ref('Error');

/**
 * The `{"data": ...}` envelope of successful responses, with examples of the whole body. Its
 * description (the response's, in the OpenAPI document) is that of `data`.
 */
export const Data = <T extends TSchema>(data: T, ...examples: unknown[]) => {
  const d = data as { description?: string; items?: { description?: string } };
  const description = d.description ?? (d.items?.description ? `A list; each: ${d.items.description}` : 'Success');
  return Type.Object({ data }, { description, ...(examples.length > 0 ? { examples: examples.map((e) => ({ data: e })) } : {}) });
};

/** The `{"message": ...}` envelope of the MongoDB user update. */
export const Message = Type.Object(
  { message: Type.String({ description: 'Confirmation naming the user and the database' }) },
  { description: 'The user is updated', examples: [{ message: 'User "app" on database "orders" updated' }] },
);

export const ObjectIdRef = Type.Object({ $oid: Type.String({ pattern: '^[0-9a-f]{24}$' }) });
export const DateRef = Type.Object({ $date: Type.Integer({ description: 'epoch milliseconds' }) });

export const InstanceNameParam = Type.String({ description: 'The instance name', examples: ['cache'] });

export const NameParams = Type.Object({ instance_name: InstanceNameParam });
