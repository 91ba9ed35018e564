import { Readable } from 'node:stream';
import { type Static, Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { operatorOf } from '../../platform/http/admin-auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, responses } from '../../platform/http/schemas.js';
import { exportLines } from './export.js';
import { splitLines } from './lines.js';
import { ImportLineSchema } from './schemas.js';
import { type ImportRefusal, ImportService, MAX_LINE_BYTES } from './service.js';

const TAGS = ['admin'];
const SECURITY = [{ adminKey: [] }];
/** Refusals listed in the answer of an upload; the counts cover them all. */
const MAX_LISTED_REFUSALS = 1000;

const ImportQuery = Type.Object(
  {
    update: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'update identities whose externalId exists (names, locale, password)',
      }),
    ),
    dryRun: Type.Optional(
      Type.Boolean({ default: false, description: 'validate and write, then roll back: nothing stays' }),
    ),
    firebaseSignerKey: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    firebaseSaltSeparator: Type.Optional(Type.String({ maxLength: 512 })),
    firebaseRounds: Type.Optional(Type.Integer({ minimum: 1, maximum: 32 })),
    firebaseMemCost: Type.Optional(Type.Integer({ minimum: 1, maximum: 20 })),
  },
  { additionalProperties: false },
);

const ImportResult = Type.Object(
  {
    lines: Type.Integer(),
    imported: Type.Integer(),
    updated: Type.Integer(),
    skipped: Type.Integer({ description: 'lines whose externalId was imported already (without update)' }),
    refused: Type.Integer(),
    refusals: Type.Array(
      Type.Object({ line: Type.Integer(), externalId: Type.Optional(Type.String()), reason: Type.String() }),
      { description: `the first ${MAX_LISTED_REFUSALS} refused lines, with their numbers and reasons` },
    ),
  },
  { additionalProperties: false },
);

const ExportQuery = Type.Object(
  {
    totpSecrets: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'decrypt authenticator-app secrets into the file; without it no line carries one',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * Import and export on the admin listener (docs/import.md): the same runner as
 * `npm run users:import`, fed by a streamed NDJSON upload, and the same lines as
 * `npm run users:export`, streamed out.
 */
export const importAdminRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new ImportService({ ...ctx, weakHashes: ctx.config.weakHashes });
  // The upload is read as a stream, line by line: no body limit applies and memory stays flat.
  app.addContentTypeParser('application/x-ndjson', (_request, payload, done) => done(null, payload));

  app.get(
    '/imports/schema',
    {
      schema: {
        tags: TAGS,
        summary: 'The JSON Schema of one line of an import or export file',
        security: SECURITY,
        response: responses({ 200: Type.Object({}, { additionalProperties: true }) }, ['admin.unauthorized']),
      },
    },
    async () => ImportLineSchema,
  );

  app.post(
    '/imports',
    {
      schema: {
        tags: TAGS,
        summary:
          'Import identities from an NDJSON upload (application/x-ndjson), streamed; one identity per line',
        description:
          'Each line is imported whole or refused whole with its number and reason; batches of 500 lines commit one at a time, so a dropped upload keeps what committed and a second upload of the same file skips it (idempotent by externalId). No notice or confirmation message is sent.',
        security: SECURITY,
        querystring: ImportQuery,
        response: responses({ 200: Data(ImportResult) }, [
          'admin.unauthorized',
          'request.unsupported_media_type',
        ]),
      },
    },
    async (request) => {
      const q = request.query as Static<typeof ImportQuery>;
      const refusals: ImportRefusal[] = [];
      const firebase =
        q.firebaseSignerKey !== undefined && q.firebaseRounds !== undefined && q.firebaseMemCost !== undefined
          ? {
              signerKey: q.firebaseSignerKey,
              saltSeparator: q.firebaseSaltSeparator ?? '',
              rounds: q.firebaseRounds,
              memCost: q.firebaseMemCost,
            }
          : undefined;
      // Pulled chunk by chunk: a line longer than MAX_LINE_BYTES is refused by its number as soon as
      // it passes the cap, its bytes dropped as they arrive (lines.ts).
      const body = request.body as Readable;
      const counts = await service.run(
        splitLines(body, MAX_LINE_BYTES),
        {
          actor: `admin:${operatorOf(request)}`,
          update: q.update ?? false,
          dryRun: q.dryRun ?? false,
          ...(firebase ? { firebase } : {}),
        },
        {
          refused: (r) => {
            if (refusals.length < MAX_LISTED_REFUSALS) refusals.push(r);
          },
        },
      );
      ctx.hashProfiles.invalidate();
      return envelope({ ...counts, refusals });
    },
  );

  app.get(
    '/exports/identities',
    {
      schema: {
        tags: TAGS,
        summary:
          'Every identity as NDJSON in the import format (password hashes; TOTP secrets only when asked)',
        security: SECURITY,
        querystring: ExportQuery,
        response: responses(
          {
            200: {
              description: 'One identity per line, shaped by GET /admin/v1/imports/schema',
              content: { 'application/x-ndjson': { schema: { type: 'string' } } },
            },
          },
          ['admin.unauthorized'],
        ),
      },
    },
    async (request, reply) => {
      const q = request.query as Static<typeof ExportQuery>;
      const stream = Readable.from(exportLines(ctx, { totpSecrets: q.totpSecrets ?? false }));
      return reply.code(200).type('application/x-ndjson').send(stream);
    },
  );
});
