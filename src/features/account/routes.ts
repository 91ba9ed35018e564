import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { guards, principalOf } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { BinaryBody, Data, IdInput, NoContent, responses } from '../../platform/http/schemas.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import { PICTURE_SIZE, PICTURE_UPLOAD_LIMIT, PICTURE_UPLOAD_TYPES } from '../identities/picture.js';
import { AccountExportSchema, AccountOverviewSchema, AccountUpdateBody } from './schemas.js';
import { AccountService } from './service.js';

export const accountRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new AccountService(ctx);
  const { session, security } = guards(ctx.auth);
  app.addSchema(AccountExportSchema);
  app.addSchema(AccountOverviewSchema);

  app.get(
    '/account',
    {
      preHandler: session,
      schema: {
        tags: ['account'],
        summary: 'The caller’s own account at a glance: identifiers unmasked, and how it is protected',
        description:
          'For the owner’s own pages: every live identifier unmasked (the session can already fetch the export, ' +
          'so unmasking here reveals nothing more to its holder), whether a password is set and when it changed, ' +
          'how many authenticators and passkeys are active, the recovery codes left and the linked providers. ' +
          'Counts and times only: never a secret, code or key. The session context keeps its masked values.',
        security: security.session,
        response: responses({ 200: Data(Type.Ref(AccountOverviewSchema)) }, ['identity.session_required']),
      },
    },
    async (request) => envelope(await service.overview(principalOf(request).identityId)),
  );

  app.patch(
    '/account',
    {
      preHandler: session,
      schema: {
        tags: ['account'],
        summary: 'Change the caller’s own settings: their language and name',
        description:
          '`locale` (`en` or `fr`, the hosted pages’ languages) is the language of every email and SMS the ' +
          'service sends the identity. The hosted pages send theirs when a signed-in person opens them. ' +
          '`givenName`, `familyName` and `displayName` are the person’s name (the OpenID `profile` scope ' +
          'answers them): each at most 100 characters without a control character, trimmed; null or an ' +
          'empty string clears one, an absent one is left as it is. What the identity already has changes ' +
          'nothing (no audit record, no event); a new language is audited (identity.locale.changed), a new ' +
          'name (identity.profile.changed, naming the fields, never their text), and either emits ' +
          'identity.updated. Answers the account at a glance, as GET /account.',
        security: security.session,
        body: AccountUpdateBody,
        response: responses({ 200: Data(Type.Ref(AccountOverviewSchema)) }, ['identity.session_required'], {
          body: true,
        }),
      },
    },
    async (request) => envelope(await service.update(principalOf(request).identityId, request.body)),
  );

  // The picture upload's bytes (PUT /account/picture): read as they are, up to the cap (larger is
  // 413 request.body_too_large before anything is decoded); what they are is judged by their
  // content (identities/picture.ts), never by this type.
  app.addContentTypeParser(
    [...PICTURE_UPLOAD_TYPES],
    { parseAs: 'buffer', bodyLimit: PICTURE_UPLOAD_LIMIT },
    (_request, body, done) => done(null, body),
  );

  app.put(
    '/account/picture',
    {
      preHandler: session,
      config: {
        ...limitFor(ctx.config.rateLimits.pictureUploads, 'account/picture'),
        binaryBody: PICTURE_UPLOAD_TYPES,
      },
      schema: {
        tags: ['account'],
        summary: 'Set the caller’s picture from an uploaded image (PNG, JPEG, WebP or GIF, at most 5 MB)',
        description:
          'The body is the image’s bytes. They are judged by their content, not by the Content-Type: ' +
          'anything that does not decode as a PNG, JPEG, WebP or GIF image, or whose canvas exceeds 40 ' +
          'megapixels, is 422 identity.picture_unusable and nothing is kept. The image is turned upright ' +
          `by its EXIF orientation, cropped to a ${PICTURE_SIZE}×${PICTURE_SIZE} square and re-encoded as ` +
          'WebP without any metadata (no EXIF, GPS or comment survives). It replaces any earlier picture ' +
          'under a new address (the old one stops answering), is audited (identity.profile.changed, ' +
          '`picture`) and emits identity.updated. Answers the account at a glance, as GET /account, ' +
          'whose `picture` is the new address. Rate limit: RATE_LIMIT_PICTURE_UPLOADS per client address.',
        security: security.session,
        consumes: [...PICTURE_UPLOAD_TYPES],
        body: BinaryBody('the image file’s bytes (PNG, JPEG, WebP or GIF; at most 5 MB)'),
        response: responses(
          { 200: Data(Type.Ref(AccountOverviewSchema)) },
          ['identity.session_required', 'identity.picture_unusable'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request) =>
      envelope(await service.setPicture(principalOf(request).identityId, request.body as Buffer)),
  );

  app.delete(
    '/account/picture',
    {
      preHandler: session,
      schema: {
        tags: ['account'],
        summary: 'Remove the caller’s picture',
        description:
          'The picture is deleted and its address stops answering; the pages show initials again. ' +
          'Without a picture nothing changes (still 204, no audit record, no event); otherwise audited ' +
          '(identity.profile.changed, `picture`) and identity.updated is emitted.',
        security: security.session,
        response: responses({ 204: NoContent }, ['identity.session_required']),
      },
    },
    async (request, reply) => {
      await service.removePicture(principalOf(request).identityId);
      return reply.code(204).send();
    },
  );

  app.get(
    '/pictures/:pictureId',
    {
      config: { publicCache: true },
      schema: {
        tags: ['account'],
        summary: 'A person’s picture, by its unguessable address (public, cached as immutable)',
        description:
          'No credentials: the address is what applications receive (the OpenID `picture` claim, ' +
          '`picture` in GET /account) and put in an `<img>`. Its id changes with every upload, so the ' +
          'bytes at one address never change: `cache-control: public, max-age=31536000, immutable`. ' +
          'Always the service’s own WebP, with `x-content-type-options: nosniff` and a ' +
          'content-security-policy that lets nothing run. A removed or replaced picture, or an erased ' +
          'identity’s, is 404 identity.picture_not_found.',
        params: Type.Object({ pictureId: IdInput }, { additionalProperties: false }),
        response: responses(
          {
            200: {
              description: `the picture: a ${PICTURE_SIZE}×${PICTURE_SIZE} WebP image`,
              content: { 'image/webp': { schema: { type: 'string', format: 'binary' } } },
            },
          },
          ['identity.picture_not_found'],
        ),
      },
    },
    async (request, reply) => {
      const picture = await service.picture(request.params.pictureId);
      return reply
        .header('content-type', picture.contentType)
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cross-origin-resource-policy', 'cross-origin')
        .send(picture.bytes);
    },
  );

  app.get(
    '/account/export',
    {
      preHandler: session,
      config: limitFor(ctx.config.rateLimits.accountExports, 'account/export'),
      schema: {
        tags: ['account'],
        summary:
          'Everything the service holds about the caller, as one JSON document (rate limited, audited)',
        description:
          'Identifiers unmasked, sign-in methods, second factors and passkeys without secrets, every session ' +
          'and sign-in attempt with the address and user agent recorded, and the audit records naming the ' +
          'identity. Never a password hash, secret, code, token or seal. RATE_LIMIT_ACCOUNT_EXPORTS per address.',
        security: security.session,
        response: responses({ 200: Data(Type.Ref(AccountExportSchema)) }, ['identity.session_required'], {
          rateLimited: true,
        }),
      },
    },
    // Answered no-store like every /api answer (platform/http/lifecycle.ts).
    async (request) => envelope(await service.export(principalOf(request).identityId)),
  );
});
