import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { guards, principalOf } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, responses } from '../../platform/http/schemas.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
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
