import { Type } from '@sinclair/typebox';
import { IdInput, Instant, Uuid } from '../../platform/http/schemas.js';
import { OPERATOR_ROLES } from './permissions.js';

const Role = Type.Union(
  OPERATOR_ROLES.map((r) => Type.Literal(r)),
  { description: 'owner: everything; support: reads, unlocks, ends sessions; auditor: the audit trail only' },
);

export const OperatorParams = Type.Object({ identityId: IdInput }, { additionalProperties: false });

export const RoleBody = Type.Object({ role: Role }, { additionalProperties: false });

export const Operator = Type.Object(
  {
    identityId: Type.Union([Uuid, Type.Null()], {
      description: 'null for a CONSOLE_OPERATORS entry naming an address',
    }),
    email: Type.Union([Type.String(), Type.Null()], {
      description: 'The address a CONSOLE_OPERATORS entry names; null otherwise',
    }),
    role: Role,
    source: Type.Union([Type.Literal('setting'), Type.Literal('api')], {
      description: 'setting: CONSOLE_OPERATORS (read-only here); api: granted through this API',
    }),
    grantedBy: Type.Union([Type.String(), Type.Null()], { description: 'The audit actor who granted it' }),
    grantedAt: Type.Union([Instant, Type.Null()]),
  },
  { additionalProperties: false },
);

/** GET /admin/v1/operators: each operator named by the identity's first verified identifier. */
export const ListedOperator = Type.Object(
  {
    ...Operator.properties,
    identifier: Type.Union(
      [
        Type.Object(
          { type: Type.Union([Type.Literal('email'), Type.Literal('phone')]), value: Type.String() },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      {
        description:
          "The identity's first verified identifier, unmasked (an audited read); null for an entry naming an address, or an identity with none",
      },
    ),
  },
  { additionalProperties: false },
);
