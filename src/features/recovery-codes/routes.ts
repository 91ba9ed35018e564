import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../platform/context.js';

// Placeholder: the routes of this capability land with their issue.
export async function recoveryCodeRoutes(_app: FastifyInstance, _opts: { ctx: AppContext }) {}
