import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { guards, principalOf } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, responses } from '../../platform/http/schemas.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import { AccountExportSchema } from './schemas.js';
import { AccountService } from './service.js';

export const accountRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new AccountService(ctx);
  const { session, security } = guards(ctx.auth);
  app.addSchema(AccountExportSchema);

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
