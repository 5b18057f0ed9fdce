import type { FastifyInstance, preSerializationHookHandler, RouteOptions } from 'fastify'

const PROBLEM_TYPE = 'application/problem+json'

/** Whether a route's responses declare a problem document, whose schema would then serialize any problem sent on it. */
const declaresProblems = (route: RouteOptions) => Object.values(route.schema?.response ?? {})
  .some((response) => typeof response === 'object' && response !== null && PROBLEM_TYPE in ((response as { content?: object }).content ?? {}))

/**
 * A problem document leaves as it was sent: plinth's are built from fixed fields, and a host's own (a hook's
 * `reply.code(422).send({ type, title, status, detail })`) must not fail the route's schema into a 500, nor lose its extension members.
 */
const problemAsSent: preSerializationHookHandler<unknown> = function problemAsSent (_request, reply, payload, done) {
  if (reply.statusCode >= 400 && String(reply.getHeader('content-type')).startsWith(PROBLEM_TYPE)) reply.serializer(JSON.stringify)
  done(null, payload)
}

/** Gives each route added after this call, here or in a child context, that declares a problem document the hook above. */
export function serializeProblemsAsSent (app: FastifyInstance) {
  app.addHook('onRoute', function problemsAsSent (route) {
    const hooks = [route.preSerialization ?? []].flat()
    if (!declaresProblems(route) || hooks.includes(problemAsSent)) return
    route.preSerialization = [...hooks, problemAsSent]
  })
}
