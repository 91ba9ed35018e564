import type { AppContext } from '../../context.js';
import { ELEVATION_REFUSALS, guards, principalOf, requestMeta } from '../../platform/http/auth.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { NoContent, responses } from '../../platform/http/schemas.js';
import { BrowserSessionCookie } from '../sessions/browser-session.js';
import { AccountDeletionBody } from './schemas.js';
import { AccountDeletionService } from './service.js';

export const accountDeletionRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new AccountDeletionService(ctx);
  const { elevated, security } = guards(ctx.auth);
  const cookie = new BrowserSessionCookie(ctx.config.publicOrigin);

  app.post(
    '/account/deletions',
    {
      preHandler: elevated,
      schema: {
        tags: ['account'],
        summary: 'Delete my account: the operator’s erasure, acted by its owner (elevated; audited)',
        description:
          'Requires a session and an elevation (x-elevation-token) and the account’s identifier typed ' +
          '(`identifier`: one of its verified email addresses or phone numbers; `DELETE` when it has none). ' +
          'Exactly the erasure of docs/admin.md: identifiers, password, authenticators, recovery codes, ' +
          'passkeys, provider links, consents and challenges deleted; every session ended (one session.ended ' +
          'each, reason erased); the identity’s earlier events redacted; its organizations of one member ' +
          'deleted and its other memberships removed; the bare id kept, disabled for good, and the audit ' +
          'chain still verifies. One identity.erased event and audit record, actor the identity itself. ' +
          'A notice goes to every verified address it had (SECURITY_NOTICES). The answer clears the hosted ' +
          'pages’ session cookie. A wrong identifier: 422 identity.account_deletion_refused; the last owner ' +
          'of an organization that has other members: 409 identity.account_deletion_last_owner; nothing ' +
          'changes on either.',
        security: security.elevated,
        body: AccountDeletionBody,
        response: responses(
          { 204: NoContent },
          [
            ...ELEVATION_REFUSALS,
            'identity.account_deletion_refused',
            'identity.account_deletion_last_owner',
          ],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      await service.delete(principalOf(request), request.body.identifier, requestMeta(request));
      return reply.header('set-cookie', cookie.clearing).code(204).send();
    },
  );
});
