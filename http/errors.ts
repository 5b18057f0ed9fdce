import { defineProblems } from './problem-error.js'

const retryIn = (seconds: string | number) => ({ 'retry-after': String(seconds) })

/** The shared HTTP layer's codes, named for the HTTP condition with no module prefix; `PLINTH_` marks a boot error. */
export const httpProblems = defineProblems({
  MalformedBody: { status: 400, code: 'MALFORMED_BODY', message: '%s' },
  MalformedUrl: { status: 400, code: 'MALFORMED_URL', message: '%s' },
  MalformedRequest: { status: 400, code: 'MALFORMED_REQUEST', message: 'The request is not valid HTTP/1.1%s' },
  RouteNotFound: { status: 404, code: 'ROUTE_NOT_FOUND', message: 'Route %s %s not found' },
  RequestTimeout: { status: 408, code: 'REQUEST_TIMEOUT', message: 'The request is not valid HTTP/1.1%s' },
  IdempotencyKeyInFlight: {
    status: 409,
    code: 'IDEMPOTENCY_KEY_IN_FLIGHT',
    message: 'The request first sent with the Idempotency-Key "%s" is still in progress; retry once it is answered',
    headers: retryIn(1)
  },
  UniqueViolation: { status: 409, code: 'UNIQUE_VIOLATION', message: 'Another row of %s already has %s (unique constraint%s)' },
  ForeignKeyViolation: { status: 409, code: 'FOREIGN_KEY_VIOLATION', message: 'This row is still referenced from %s (foreign key constraint%s)' },
  PreconditionFailed: { status: 412, code: 'PRECONDITION_FAILED', message: '%s has changed since the ETag sent in If-Match; read it again for its current ETag' },
  BodyTooLarge: { status: 413, code: 'BODY_TOO_LARGE', message: '%s' },
  PathParameterTooLong: { status: 414, code: 'PATH_PARAMETER_TOO_LONG', message: '%s' },
  UnsupportedMediaType: { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Content type "%s" is not supported here' },
  ExpectationFailed: { status: 417, code: 'EXPECTATION_FAILED', message: 'Only "Expect: 100-continue" is supported' },
  ValidationFailed: { status: 422, code: 'VALIDATION_FAILED', message: '/%s%s %s' },
  PreconditionRequired: { status: 428, code: 'PRECONDITION_REQUIRED', message: 'This write needs If-Match with the ETag of %s, from its last read or write' },
  RateLimited: {
    status: 429,
    code: 'RATE_LIMITED',
    message: 'Too many requests to %s from this address; retry in %s seconds',
    headers: (_route: string | number, seconds: string | number) => retryIn(seconds)
  },
  HeadersTooLarge: { status: 431, code: 'HEADERS_TOO_LARGE', message: 'The request is not valid HTTP/1.1%s' },
  InternalError: { status: 500, code: 'INTERNAL_ERROR', message: 'An unexpected error occurred (request %s)' },
  DatabaseUnavailable: { status: 503, code: 'DATABASE_UNAVAILABLE', message: 'The database is unavailable; try again shortly', headers: retryIn(5) },
  // The server cancelled a statement of this request at the statement timeout: this request alone fails.
  DatabaseStatementTimeout: {
    status: 503,
    code: 'DATABASE_STATEMENT_TIMEOUT',
    message: 'A statement of this request ran past the statement timeout%s and was cancelled; ask for less (a filter, a smaller limit) or try again shortly',
    headers: retryIn(5)
  },
  // A host's own coded error: the handler answers the status and code it is given.
  HostProblem: { code: 'PLINTH_PROBLEM', message: '%s' },
  PluginOutOfOrder: { code: 'PLINTH_PLUGIN_ORDER', message: '%s must be registered before %s: %s' }
})
