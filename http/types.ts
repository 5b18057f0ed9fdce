import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type {
  FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest,
  RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault
} from 'fastify'

/** plinth's Fastify instance: TypeBox route schemas type the handlers. */
export type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>

/** A guard: refuses the request with a problem document, or lets it through with `request.account` set. */
export type Guard = (this: App, request: FastifyRequest, reply: FastifyReply) => Promise<unknown>
