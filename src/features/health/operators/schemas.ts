import { Type } from '@sinclair/typebox';
import { Instant } from '../../../platform/http/schemas.js';

const Status = Type.Union([Type.Literal('ok'), Type.Literal('degraded')]);

const Check = Type.Object(
  {
    status: Type.Union([Type.Literal('up'), Type.Literal('down'), Type.Literal('not_configured')]),
    latencyMs: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], {
      description: 'The round trip; null when down or not configured',
    }),
  },
  { additionalProperties: false },
);

const SigningKey = Type.Object(
  {
    purpose: Type.Union([Type.Literal('id_token'), Type.Literal('access_token')], {
      description:
        '`id_token`: the OpenID Provider (rotated by `npm run oidc:rotate-keys`); `access_token`: the API’s access tokens',
    }),
    kid: Type.String(),
    alg: Type.String(),
    createdAt: Instant,
    ageDays: Type.Integer({ minimum: 0 }),
    rotateBy: Instant,
    rotationDue: Type.Boolean({ description: 'Past rotateBy: rotate it' }),
  },
  { additionalProperties: false },
);

/** GET /admin/v1/health: the service as an operator reads it (docs/admin.md, "Health"). */
export const Health = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')], {
      description: '`degraded` when any section is; the sections say which',
    }),
    checkedAt: Instant,
    startedAt: Instant,
    uptimeSeconds: Type.Integer({ minimum: 0 }),
    readiness: Type.Object(
      { status: Status, database: Check, redis: Check },
      { additionalProperties: false },
    ),
    keys: Type.Union(
      [
        Type.Object(
          {
            status: Status,
            rotateAfterDays: Type.Integer({ description: 'The age after which a key is due for rotation' }),
            signing: Type.Array(SigningKey),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      { description: 'null when the database does not answer' },
    ),
    queues: Type.Union(
      [
        Type.Object(
          {
            status: Status,
            lagLimitSeconds: Type.Integer({
              description: 'How long the oldest waiting item may wait before the queues are degraded',
            }),
            webhookDeliveries: Type.Object(
              {
                pending: Type.Integer({ minimum: 0 }),
                due: Type.Integer({ minimum: 0, description: 'Due now, not picked up yet' }),
                inFlight: Type.Integer({ minimum: 0 }),
                dead: Type.Integer({ minimum: 0 }),
                oldestDueAt: Type.Union([Instant, Type.Null()]),
                failingEndpoints: Type.Integer({ minimum: 0 }),
                disabledEndpoints: Type.Integer({ minimum: 0 }),
              },
              { additionalProperties: false },
            ),
            securityNotices: Type.Object(
              { pending: Type.Integer({ minimum: 0 }), oldestAt: Type.Union([Instant, Type.Null()]) },
              { additionalProperties: false },
            ),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      { description: 'null when the database does not answer' },
    ),
  },
  { additionalProperties: false },
);
