import { Type, type Static } from '@sinclair/typebox'
import { ref } from './common.js'

/** RFC 9457 problem document: the body of every error response. */
// No examples on the fields: this one component documents every error status, and an example
// such as "item 7 not found" would show under a 401 as well.
export const ProblemSchema = Type.Object({
  type: Type.String({ description: 'Always about:blank: the status and code say what happened' }),
  title: Type.String({ description: 'The HTTP status phrase' }),
  status: Type.Integer({ minimum: 400, maximum: 599, description: 'The HTTP status, repeated' }),
  detail: Type.String({ description: 'What went wrong with this request, for people' }),
  code: Type.String({ description: 'Stable machine-readable error name, e.g. AUTH_NOT_AUTHENTICATED' })
}, { $id: 'Problem', title: 'Problem', description: 'RFC 9457 problem document' })

export type Problem = Static<typeof ProblemSchema>

export const ValidationProblemSchema = Type.Object({
  ...ProblemSchema.properties,
  errors: Type.Array(Type.Object({
    path: Type.String({ description: 'JSON pointer into the request part', examples: ['/body/price'] }),
    message: Type.String({ examples: ['must be >= 0'] })
  }))
}, { $id: 'ValidationProblem', title: 'ValidationProblem', description: 'Problem document of a request that failed its schema' })

export type ValidationProblem = Static<typeof ValidationProblemSchema>

/**
 * Response schemas for the error statuses a route can return, as `application/problem+json`:
 * 422 carries `errors[]`, every other status the plain problem document.
 */
export function problemResponses (...statuses: number[]) {
  return Object.fromEntries(statuses.map((status) => [
    status,
    {
      description: WHEN[status] ?? 'Error',
      // The media type the error handler sends; Fastify picks the serializer by it too.
      content: { 'application/problem+json': { schema: ref(status === 422 ? ValidationProblemSchema : ProblemSchema) } }
    }
  ]))
}

/** The response descriptions of the document: what each status means in this API. */
const WHEN: Record<number, string> = {
  400: 'The body is not parseable JSON or form data',
  401: 'No valid token: missing, malformed, expired, revoked or of the wrong type (or wrong credentials at login)',
  403: 'Authenticated but not allowed: inactive account, not a superuser, a missing scope, or a wrong current password',
  404: 'No such record',
  409: 'The email is already registered',
  413: 'The body is larger than BODY_LIMIT',
  422: 'The body, query or path failed its schema; errors[] names each field',
  429: 'Too many failed logins; retry after Retry-After seconds',
  503: 'The database is unreachable; retry after Retry-After seconds'
}
