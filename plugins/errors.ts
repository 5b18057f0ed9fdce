import type { IncomingMessage, ServerResponse } from 'node:http'
import fp from 'fastify-plugin'
import { httpProblems } from '../http/errors.js'
import { problem, sendProblem } from '../http/problems.js'
import { assertBeforeRoutes } from '../http/order.js'
import { apiSecurityHeaders } from '../http/security-headers.js'
import type { App } from '../http/types.js'
import { addSchemas } from '../schemas/common.js'
import { ProblemSchema, ValidationProblemSchema } from '../schemas/error.js'
import { problemErrorHandler } from '../http/problems.js'
import { serializeProblemsAsSent } from '../http/problem-serialization.js'

/** One error format: RFC 9457 problem documents with a stable `code`. @see https://www.rfc-editor.org/rfc/rfc9457 */
async function errorsPlugin (app: App) {
  assertBeforeRoutes(app, 'plinth-errors', 'it declares the shared Problem schemas, which the profiles registered before it have declared already')
  addSchemas(app, [ProblemSchema, ValidationProblemSchema])

  app.setErrorHandler(problemErrorHandler)
  serializeProblemsAsSent(app)

  app.setNotFoundHandler(function routeNotFound (request, reply) {
    const { RouteNotFound } = httpProblems
    return sendProblem(reply, problem(404, RouteNotFound.code, new RouteNotFound(request.method, request.url).message))
  })

  // Node answers an Expect other than 100-continue with a bare 417 of its own, unless asked here.
  app.server.on('checkExpectation', function expectationFailed (request: IncomingMessage, response: ServerResponse) {
    const { ExpectationFailed } = httpProblems
    const body = JSON.stringify(problem(417, ExpectationFailed.code, ExpectationFailed.template))
    response.writeHead(417, { ...apiSecurityHeaders, 'content-type': 'application/problem+json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' })
    response.end(body)
  })
}

export default fp(errorsPlugin, { name: 'plinth-errors', fastify: '5.x' })
