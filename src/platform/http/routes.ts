import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';

/** The instance a feature declares its routes on: requests and replies are typed by their TypeBox schemas. */
export type RouteApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/**
 * A feature's routes as a Fastify plugin (encapsulated: its hooks and decorations stay inside).
 * `declare` gets the typed instance and the options app.ts registers the plugin with.
 */
export function featureRoutes<Options>(declare: (app: RouteApp, options: Options) => Promise<void> | void) {
  return async (root: FastifyInstance, options: Options): Promise<void> => {
    await declare(root.withTypeProvider<TypeBoxTypeProvider>(), options);
  };
}
