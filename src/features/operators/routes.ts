import { Type } from '@sinclair/typebox';
import { operatorOf } from '../../platform/http/admin-auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, NoContent, responses } from '../../platform/http/schemas.js';
import * as schema from './schemas.js';
import type { OperatorService } from './service.js';

const TAGS = ['operators'];
const SECURITY = [{ adminKey: [] }];

/**
 * The operators and their roles (docs/admin.md, "Operators"), on the admin listener under
 * /admin/v1: CONSOLE_OPERATORS's entries are read-only here, the others are granted and taken
 * away by an owner (or a key), never by the operator they name.
 */
export const operatorRoutes = featureRoutes(async (app, { operators }: { operators: OperatorService }) => {
  app.get(
    '/operators',
    {
      schema: {
        tags: TAGS,
        summary:
          'The operators: those CONSOLE_OPERATORS names, then those granted a role here (newest first)',
        description:
          "Each named by its identity's first verified identifier: one admin.identity.read audit record per identity named.",
        security: SECURITY,
        response: responses({ 200: Data(Type.Array(schema.ListedOperator)) }, [
          'admin.unauthorized',
          'admin.forbidden',
        ]),
      },
    },
    async (request) => envelope(await operators.list(operatorOf(request))),
  );

  app.put(
    '/operators/:identityId',
    {
      schema: {
        tags: TAGS,
        summary: 'Grant or change the role of an identity of this service (audited)',
        description:
          "Never the caller's own role (403 admin.operator_own_role); never an identity CONSOLE_OPERATORS names (409).",
        security: SECURITY,
        params: schema.OperatorParams,
        body: schema.RoleBody,
        response: responses({ 200: Data(schema.Operator) }, [
          'admin.unauthorized',
          'admin.forbidden',
          'admin.operator_own_role',
          'admin.identity_not_found',
          'admin.identity_erased',
          'admin.operator_configured',
        ]),
      },
    },
    async (request) =>
      envelope(
        await operators.grant(
          request.params.identityId,
          request.body.role,
          operatorOf(request),
          request.operatorIdentity?.identityId,
        ),
      ),
  );

  app.delete(
    '/operators/:identityId',
    {
      schema: {
        tags: TAGS,
        summary: 'Take away a role granted through this API (audited)',
        security: SECURITY,
        params: schema.OperatorParams,
        response: responses({ 204: NoContent }, [
          'admin.unauthorized',
          'admin.forbidden',
          'admin.operator_own_role',
          'admin.operator_configured',
          'admin.operator_not_found',
        ]),
      },
    },
    async (request, reply) => {
      await operators.revoke(
        request.params.identityId,
        operatorOf(request),
        request.operatorIdentity?.identityId,
      );
      return reply.code(204).send();
    },
  );
});
