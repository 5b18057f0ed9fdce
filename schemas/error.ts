import { STATUS_CODES } from 'node:http'
import { Type, type Static } from '@sinclair/typebox'
import { httpProblems as http } from '../http/errors.js'
import type { ProblemSample } from '../http/problem-error.js'
import { ref } from './common.js'

/** RFC 9457 problem document. No field examples: this one component documents every error status. */
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

/** A status with its example code and detail, and what it means on this route when that differs from the usual. */
export type ProblemExample = [status: number, code: string, detail: string, when?: string]

/** The 409 of a write a constraint of the table refused, which any route that writes rows may answer. */
export const ConstraintConflict: ProblemExample = [...http.UniqueViolation.example('tasks', 'this code', ' "tasks_code_key"'),
  'A constraint of the table refused the write: a unique key another row has (UNIQUE_VIOLATION), or a row that rows of another table still reference (FOREIGN_KEY_VIOLATION)']

function withMeaning (entry: number | ProblemExample): Required<ProblemExample> {
  const [status, code, detail, when] = typeof entry === 'number' ? [entry, ...EXAMPLES[entry] ?? ['ERROR', 'Error']] as const : entry
  return [status, code, detail, when ?? WHEN[status] ?? 'Error']
}

/** The meanings of a status named more than once, in one description: the first's example stands for them all. */
function merged (entries: Array<Required<ProblemExample>>): Array<Required<ProblemExample>> {
  const byStatus = new Map<number, Required<ProblemExample>>()
  for (const entry of entries) {
    const first = byStatus.get(entry[0])
    byStatus.set(entry[0], first ? [first[0], first[1], first[2], `${first[3]}; or ${entry[3][0]!.toLowerCase()}${entry[3].slice(1)}`] : entry)
  }
  return [...byStatus.values()]
}

/** Error responses as `application/problem+json`, each with an example of its own status (a shared one would show `status: 400` everywhere). */
export function problemResponses (...statuses: Array<number | ProblemExample>) {
  return Object.fromEntries(merged(statuses.map(withMeaning)).map(([status, code, detail, when]) => {
    const example = { type: 'about:blank', title: STATUS_CODES[status], status, detail, code }
    return [status, {
      description: when,
      // The media type the error handler sends; Fastify picks the serializer by it too.
      content: {
        'application/problem+json': {
          schema: ref(status === 422 ? ValidationProblemSchema : ProblemSchema),
          example: status === 422 ? { ...example, errors: [{ path: '/body/price', message: 'must be >= 0' }] } : example
        }
      }
    }]
  }))
}

const sample = ([, code, detail]: ProblemSample): [code: string, detail: string] => [code, detail]

/** Each status's example; auth and accounts codes are written out (schemas/ cannot import them), held to their registries by a test. */
const EXAMPLES: Record<number, [code: string, detail: string]> = {
  400: sample(http.MalformedBody.example('Body is not valid JSON: Unexpected end of JSON input')),
  401: ['AUTH_NOT_AUTHENTICATED', 'Not authenticated: send an access token as "Authorization: Bearer <token>"'],
  403: ['AUTH_INACTIVE_USER', 'This account is inactive'],
  409: ['ACCOUNT_EMAIL_TAKEN', 'The email ada@example.com is already registered'],
  412: sample(http.PreconditionFailed.example('item 7')),
  413: sample(http.BodyTooLarge.example('Request body is too large')),
  414: sample(http.PathParameterTooLong.example("'/api/v1/items/7777...' is exceeding the max param length")),
  415: sample(http.UnsupportedMediaType.example('text/plain')),
  422: sample(http.ValidationFailed.example('body', '/price', 'must be >= 0')),
  428: sample(http.PreconditionRequired.example('item 7')),
  429: ['AUTH_TOO_MANY_FAILURES', 'Too many failed logins for this account from this address; retry in 840 seconds'],
  500: sample(http.InternalError.example('0b6c1f0e-8a1d-4e51-9d5c-2f4f5a7e9c10')),
  503: sample(http.DatabaseUnavailable.example())
}

const WHEN: Record<number, string> = {
  400: 'The request does not parse: a body that is not valid JSON or form data, or a URL that does not decode',
  401: 'No valid token: missing, malformed, expired, revoked or of the wrong type (or wrong credentials at login)',
  403: 'Authenticated but not allowed: inactive account, not a superuser, a missing scope, or a wrong current password',
  404: 'No such record',
  409: 'The email is already registered',
  412: 'The row has changed since the ETag sent in If-Match (PRECONDITION_FAILED); read it again',
  413: 'The body is larger than BODY_LIMIT',
  414: 'A path parameter is longer than 100 characters',
  415: 'The body is of a content type this route does not take',
  422: 'The body, query or path failed its schema; errors[] names each field',
  428: 'The server requires If-Match on writes (REQUIRE_IF_MATCH) and the request has none (PRECONDITION_REQUIRED)',
  429: 'Too many requests from this address (RATE_LIMITED), or failed logins for this account (AUTH_TOO_MANY_FAILURES); retry after Retry-After seconds',
  500: 'An unexpected error: the detail names the request id to look for in the log',
  503: 'The database is unreachable, the server is closing, or it is busy and sheds load (SERVER_BUSY); retry after Retry-After seconds'
}

/** A guarded route's schema: the bearer scheme (Swagger UI's Authorize fills it in), and its 401 and 403. */
export function guarded<T extends { response: object }> (schema: T, guard: unknown): T {
  if (guard === undefined) return schema
  return { ...schema, security: [{ OAuth2PasswordBearer: [] }], response: { ...schema.response, ...problemResponses(401, 403) } }
}
