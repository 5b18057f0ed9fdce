import { STATUS_CODES, type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import {
  constraintViolation, isDatabaseUnavailable, isRefusedValue, isStatementCancelled, refusedField, sqlState,
  type ConstraintViolation
} from '../db/errors.js'
import { serverBusyIn } from '../concurrency/busy.js'
import { constraintColumns, type ConstraintColumns } from '../db/constraints.js'
import { TEXT_PATTERN } from '../schemas/common.js'
import type { Problem, ValidationProblem } from '../schemas/error.js'
import { FORMAT_MESSAGES, unstorableText } from '../schemas/storable.js'
import { httpProblems } from './errors.js'
import type { ProblemClass, ProblemError } from './problem-error.js'
import { apiSecurityHeaders } from './security-headers.js'

type ValidationError = NonNullable<FastifyError['validation']>[number]

const {
  BodyTooLarge, DatabaseStatementTimeout, DatabaseUnavailable, ForeignKeyViolation, HeadersTooLarge, HostProblem, InternalError,
  MalformedBody, MalformedRequest, MalformedUrl, PathParameterTooLong, RequestTimeout, UniqueViolation,
  UnsupportedMediaType, ValidationFailed
} = httpProblems

const FASTIFY_CODES: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: BodyTooLarge.code,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: UnsupportedMediaType.code,
  FST_ERR_CTP_EMPTY_JSON_BODY: MalformedBody.code,
  FST_ERR_CTP_INVALID_JSON_BODY: MalformedBody.code,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: MalformedBody.code,
  FST_ERR_BAD_URL: MalformedUrl.code,
  FST_ERR_MAX_PARAM_LENGTH: PathParameterTooLong.code
}

const codeFor = (status: number) => (STATUS_CODES[status] ?? 'ERROR').toUpperCase().replace(/\W+/g, '_')

/** A 422 for input that passed its schema but is still wrong, `errors[]` naming the part as a schema failure does. */
export function inputError (InvalidInput: ProblemClass<'/%s%s %s'>) {
  return (context: 'params' | 'querystring' | 'body' | 'headers', path: string, message: string): FastifyError =>
    Object.assign(new InvalidInput(context, path, message), {
      validationContext: context,
      validation: [{ keyword: 'input', instancePath: path, schemaPath: '#', params: {}, message }]
    })
}

export function problem (status: number, code: string, detail: string): Problem {
  return { type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail, code }
}

type ProblemParts = ValidationProblem['errors']

/** A problem document of a host's own code, with its `headers` (a 401's WWW-Authenticate, a 503's Retry-After). */
export function problemError (status: number, code: string, detail: string, headers?: Record<string, string>): ProblemError {
  return Object.assign(new HostProblem(detail), { code, statusCode: status }, headers === undefined ? {} : { headers })
}

/** A 422 like a schema's: `throw validationError({ '/body/title': 'is reserved' })`. */
export function validationError (errors: Record<string, string>, code = ValidationFailed.code): FastifyError {
  const parts = Object.entries(errors).map(([path, message]) => ({ path, message }))
  return Object.assign(problemError(422, code, parts.map(({ path, message }) => `${path} ${message}`).join('; ')), { errors: parts })
}

export const conflictError = (code: string, detail: string) => problemError(409, code, detail)

export const forbiddenError = (code: string, detail: string) => problemError(403, code, detail)

/** A 404: nothing there, or nothing this caller may see. */
export const notFoundError = (code: string, detail: string) => problemError(404, code, detail)

const isPart = (part: unknown): part is ProblemParts[number] =>
  typeof (part as { path?: unknown })?.path === 'string' && typeof (part as { message?: unknown }).message === 'string'

function partsOf (error: FastifyError): ProblemParts {
  const { errors } = error as { errors?: unknown }
  return Array.isArray(errors) ? errors.filter(isPart).map(({ path, message }) => ({ path, message })) : []
}

function statusOf (error: FastifyError): number {
  const { status } = error as { status?: unknown }
  return error.statusCode ?? (typeof status === 'number' ? status : 500)
}

function pointer (context: string | undefined, error: ValidationError): string {
  const missing = error.keyword === 'required' ? `/${String(error.params.missingProperty)}` : ''
  return `/${context ?? 'request'}${error.instancePath}${missing}`
}

function message (error: ValidationError & { data?: unknown }): string {
  if (error.keyword === 'required') return 'is required'
  // The text pattern fails exactly where unstorableText finds a reason.
  if (error.keyword === 'pattern' && error.params.pattern === TEXT_PATTERN) return `must not contain ${unstorableText(error.data as string) as string}`
  const formatMessage = error.keyword === 'format' ? FORMAT_MESSAGES[error.params.format as string] : undefined
  return formatMessage ?? error.message ?? 'is invalid'
}

function validationProblem (error: FastifyError): ValidationProblem {
  const errors = (error.validation ?? []).map((item) => ({
    path: pointer(error.validationContext, item),
    message: message(item)
  }))
  const detail = errors.map((item) => `${item.path} ${item.message}`).join('; ') || 'request is invalid'
  return { ...problem(422, ValidationFailed.code, detail), errors }
}

function refusedValueProblem (error: FastifyError, request: FastifyRequest): ValidationProblem {
  // Validation should have refused it: the log says which value slipped through, so its rule can be tightened.
  request.log.warn({ err: withoutValues(error) }, 'the database refused a value that passed validation')
  const field = refusedField(error)
  const path = `/${request.body === undefined ? 'querystring' : 'body'}${field === undefined ? '' : `/${field}`}`
  const message = 'is not a value the database accepts'
  return { ...problem(422, ValidationFailed.code, `${path} ${message}`), errors: [{ path, message }] }
}

function toProblem (error: FastifyError, request: FastifyRequest): Problem | ValidationProblem {
  if (error.validation) return validationProblem(error)
  if (isRefusedValue(error)) return refusedValueProblem(error, request)
  const status = statusOf(error)
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return problem(415, UnsupportedMediaType.code, new UnsupportedMediaType(String(request.headers['content-type'])).message)
  }
  if ((status >= 400 && status < 500) || (status > 500 && status < 600 && error.code)) {
    const body = problem(status, FASTIFY_CODES[error.code] ?? error.code ?? codeFor(status), error.message)
    body.detail ||= body.title
    // Every 422 has errors[], as the routes' 422 schema says, even one a host's hook threw without naming a part.
    return status === 422 ? { ...body, errors: partsOf(error) } : body
  }
  // Anything else is our fault: the log gets the error, the client a generic line it can quote.
  request.log.error({ err: withoutValues(error) }, 'unhandled error')
  return problem(500, InternalError.code, new InternalError(request.id).message)
}

// Where drivers keep a statement's values (`params`, `parameters`, `args`), and PostgreSQL's fields that quote them (`detail`, `where`).
const VALUE_KEYS = new Set(['params', 'parameters', 'args', 'queryOptions', 'detail', 'where'])
const MAX_CAUSES = 4

/** Drizzle's message ends in the values; PostgreSQL's (which has a `severity`) in the value it could not read, quoted. */
const messageWithoutValues = (error: Error) => 'severity' in error
  ? error.message.replace(/: "[\s\S]*"$/, ': "…"')
  : error.message.replace(/\nparams: [\s\S]*$/, '')

/** `error` for the log: statement text and SQLSTATE, never its bound values (a password hash), causes included. */
export function withoutValues (error: unknown, depth = 0): unknown {
  if (!(error instanceof Error)) return error
  const copy = Object.create(Object.getPrototypeOf(error) as object) as Error & Record<string, unknown>
  for (const [key, value] of Object.entries(error)) if (!VALUE_KEYS.has(key) && key !== 'cause') copy[key] = value
  copy.message = messageWithoutValues(error)
  const frames = String(error.stack).split('\n').filter((line) => line.startsWith('    at '))
  copy.stack = [`${error.name}: ${copy.message}`, ...frames].join('\n')
  if (error.cause !== undefined && depth < MAX_CAUSES) copy.cause = withoutValues(error.cause, depth + 1)
  const state = depth === 0 ? sqlState(error) : undefined
  if (state !== undefined) copy.sqlState = state
  return copy
}

function constraintPaths (request: FastifyRequest, columns: string[], leftOut = false): string[] {
  const body = request.body
  if (body === undefined || body === null) return ['/request']
  const named = leftOut ? columns : typeof body === 'object' ? columns.filter((column) => column in body) : []
  return named.length > 0 ? named.map((column) => `/body/${column}`) : ['/body']
}

const quoted = (name: string | undefined) => name === undefined ? '' : ` "${name}"`

function constraintValidationProblem (request: FastifyRequest, paths: string[], message: string): ValidationProblem {
  const errors = paths.map((path) => ({ path, message }))
  return { ...problem(422, ValidationFailed.code, errors.map(({ path }) => `${path} ${message}`).join('; ')), errors }
}

/** A duplicate key or a row still referenced is 409; a reference to no row, a CHECK or a NOT NULL is 422. No values. */
function constraintProblem (request: FastifyRequest, violation: ConstraintViolation, { columns, references }: ConstraintColumns) {
  const { kind, constraint, table = 'the table' } = violation
  if (kind === 'unique') {
    const fields = columns.length === 0 ? 'these values' : `this ${columns.join(' and ')}`
    return problem(409, UniqueViolation.code, new UniqueViolation(table, fields, quoted(constraint)).message)
  }
  if (kind === 'foreign_key') {
    const paths = constraintPaths(request, columns)
    // A create, or a write that sets the key, points at no row; any other write (a delete above all) would leave rows pointing at nothing.
    if (request.method !== 'POST' && !paths[0]!.startsWith('/body/')) {
      const from = columns.length === 0 ? table : `${table} (${columns.join(', ')})`
      return problem(409, ForeignKeyViolation.code, new ForeignKeyViolation(from, quoted(constraint)).message)
    }
    return constraintValidationProblem(request, paths, `must match a row of ${references ?? 'the table it references'} (foreign key constraint${quoted(constraint)})`)
  }
  if (kind === 'check') return constraintValidationProblem(request, constraintPaths(request, columns), `is refused by the check constraint${quoted(constraint)} of ${table}`)
  return constraintValidationProblem(request, constraintPaths(request, columns, true), `must have a value: the column is NOT NULL in ${table}`)
}

async function constraintAnswer (request: FastifyRequest, violation: ConstraintViolation) {
  // Named, never valued: which constraint refuses writes is worth a line, even if it is the client's error.
  request.log.info({ constraint: violation.constraint, table: violation.table, kind: violation.kind }, 'a constraint refused the write')
  const server = request.server
  const none: ConstraintColumns = { columns: violation.column === undefined ? [] : [violation.column] }
  const columns = server.hasDecorator('plinthDb') ? await constraintColumns(server.plinthDb.db, violation).catch(() => none) : none
  return constraintProblem(request, violation, columns)
}

/** The headers are the error's own, set before: this handler adds none of its own (no challenge, no wait). */
export function sendProblem (reply: FastifyReply, body: Problem) {
  return reply.code(body.status).type('application/problem+json').send(body)
}

function databaseUnavailableIn (error: ProblemError, request: FastifyRequest): ProblemError | undefined {
  if (isStatementCancelled(error)) {
    request.log.warn({ err: withoutValues(error) }, 'statement cancelled at the statement timeout')
    const ms = request.server.hasDecorator('plinthDb') ? request.server.plinthDb.statementTimeoutMs : undefined
    return new DatabaseStatementTimeout(ms === undefined ? '' : ` of ${ms} ms`)
  }
  if (!isDatabaseUnavailable(error)) return undefined
  request.log.warn({ err: withoutValues(error) }, 'database unavailable')
  return new DatabaseUnavailable()
}

/** Any error as a problem document: at the root, on each profile's context (for host apps), and before routing (`frameworkErrors`). */
export function problemErrorHandler (this: unknown, thrown: ProblemError, request: FastifyRequest, reply: FastifyReply) {
  // A query refused under overload reaches here wrapped by Drizzle.
  const error = serverBusyIn(thrown) ?? databaseUnavailableIn(thrown, request) ?? thrown
  const violation = constraintViolation(error)
  if (violation !== undefined) return constraintAnswer(request, violation).then((body) => sendProblem(reply, body))
  const body = toProblem(error, request)
  if (error.headers && (body.status < 500 || body.code === error.code)) reply.headers(error.headers)
  if (reply.getHeader('connection') === 'close' && !request.raw.complete) lingerClose(request.raw, reply)
  return sendProblem(reply, body)
}

export const LINGER = { bytes: 16 * 1024 * 1024, ms: 5000 }

/** Lingering close for a body refused unread (413, 415): up to LINGER of it is dropped, so the client's write cannot fail before it reads. */
function lingerClose (request: IncomingMessage, reply: FastifyReply) {
  const declared = Number(request.headers['content-length'])
  if (declared > LINGER.bytes) return
  reply.removeHeader('connection')
  let read = 0
  // The request's destroy ends its socket (and works on an injected request too).
  const cut = () => request.destroy()
  const timer = setTimeout(cut, LINGER.ms).unref()
  request.on('data', (chunk: Buffer) => {
    read += chunk.length
    if (read > LINGER.bytes) cut()
  })
  request.once('end', () => clearTimeout(timer))
  request.once('close', () => clearTimeout(timer))
  request.resume()
}

const CLIENT_ERRORS: Record<string, ProblemClass<'The request is not valid HTTP/1.1%s'>> = {
  HPE_HEADER_OVERFLOW: HeadersTooLarge,
  ERR_HTTP_REQUEST_TIMEOUT: RequestTimeout
}

// The responses below bypass Fastify's hooks, so they set the API's security headers themselves.
const securityHeaderLines = Object.entries(apiSecurityHeaders).map(([name, value]) => `${name}: ${value}\r\n`).join('')

/** Bytes Node's HTTP parser refuses never become a request: the problem document goes straight to the socket, which then closes. */
export function clientErrorHandler (error: Error & { code?: string, reason?: string }, socket: Socket) {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const Refusal = CLIENT_ERRORS[error.code ?? ''] ?? MalformedRequest
  const status = Refusal.status!
  const reason = status === 400 && error.reason ? `: ${error.reason}` : ''
  const body = JSON.stringify(problem(status, Refusal.code, new Refusal(reason).message))
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n${securityHeaderLines}Connection: close\r\n\r\n${body}`)
  }
  socket.destroy(error)
}
