import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { ProblemError } from '../../http/problem-error.js'
import { problem, problemErrorHandler } from '../../http/problems.js'
import { ref } from '../../schemas/common.js'
import { OAuthErrorSchema, type OAuthError, type OAuthErrorCode } from '../../schemas/token.js'
import { InvalidClient, InvalidRequest, InvalidScope } from './errors.js'

/** The RFC 6749 error of each refusal the token endpoint makes; anything else keeps its problem document (429, 503, 500). */
const OAUTH_CODES: Record<string, OAuthErrorCode> = {
  AUTH_INVALID_REQUEST: 'invalid_request',
  AUTH_INVALID_CLIENT: 'invalid_client',
  AUTH_UNSUPPORTED_GRANT_TYPE: 'unsupported_grant_type',
  AUTH_INVALID_SCOPE: 'invalid_scope',
  AUTH_INVALID_CREDENTIALS: 'invalid_grant',
  AUTH_INVALID_REFRESH_TOKEN: 'invalid_grant',
  AUTH_INACTIVE_USER: 'invalid_grant',
  AUTH_UNVERIFIED_EMAIL: 'invalid_grant',
  // A body that does not parse or has the wrong type is a malformed request too.
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'invalid_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_request'
}

function validationDetail (error: FastifyError): string {
  const [first] = error.validation ?? []
  if (!first) return error.message
  const field = (first.keyword === 'required' ? String(first.params.missingProperty) : first.instancePath.slice(1)) || 'the body'
  return `${field} ${first.keyword === 'required' ? 'is required' : first.message ?? 'is invalid'}`
}

/** Token responses are never cached (RFC 6749 section 5.1), errors included. */
export function noStore (reply: FastifyReply) {
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
}

export function oauthErrorResponse (description: string, [error, code, detail]: [string, string, string]) {
  const status = error === 'invalid_client' ? 401 : 400
  return {
    description,
    content: {
      'application/json': {
        schema: ref(OAuthErrorSchema),
        example: { error, error_description: detail, type: 'about:blank', title: STATUS_CODES[status], status, detail, code }
      }
    }
  }
}

/** RFC 6749 section 5.2 errors, which are problem documents too; 401 only for client authentication, with a Basic challenge. */
export function oauthErrorHandler (error: ProblemError, request: FastifyRequest, reply: FastifyReply) {
  noStore(reply)
  const oauth = error.validation ? 'invalid_request' : OAUTH_CODES[error.code]
  if (oauth === undefined) return problemErrorHandler(error, request, reply)
  const status = oauth === 'invalid_client' ? 401 : 400
  const detail = error.validation ? validationDetail(error) : error.message
  const code = error.validation
    ? 'AUTH_INVALID_REQUEST'
    : error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'UNSUPPORTED_MEDIA_TYPE' : error.code.startsWith('FST_') ? 'MALFORMED_BODY' : error.code
  // The error's headers explain its own status: those of a 401 answered as invalid_grant (a Bearer challenge) are not sent.
  if (error.headers && error.statusCode === status) reply.headers(error.headers)
  const body: OAuthError = { error: oauth, error_description: detail, ...problem(status, code, detail) }
  return reply.code(status).type('application/json; charset=utf-8').send(body)
}

/** Client authentication: HTTP Basic or client_id/client_secret in the form, not both. There is no registry: any client is public. */
export function checkClient (request: FastifyRequest, body: { client_id?: string, client_secret?: string }) {
  const [scheme, credentials, ...rest] = (request.headers.authorization ?? '').split(' ')
  if (body.client_secret !== undefined && body.client_id === undefined) throw new InvalidRequest('client_secret needs client_id')
  if (scheme?.toLowerCase() !== 'basic') return
  if (body.client_id !== undefined) throw new InvalidRequest('use one client authentication method: HTTP Basic or client_id in the form')
  const decoded = credentials && rest.length === 0 ? Buffer.from(credentials, 'base64').toString() : ''
  if (!decoded.includes(':')) throw new InvalidClient('the Basic credentials are not base64 of client_id:client_secret')
}

// RFC 6749 section 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/

export function requestedScopes (scope: string | undefined): string[] | undefined {
  if (scope === undefined) return undefined
  const scopes = [...new Set(scope.split(' ').filter((item) => item !== ''))]
  if (scopes.length === 0) return undefined
  const bad = scopes.find((item) => !SCOPE_TOKEN.test(item))
  if (bad !== undefined) throw new InvalidScope(`scope ${JSON.stringify(bad)} is not a valid scope token`)
  return scopes
}

/** `requested` when each is among `allowed`, else invalid_scope naming those that are not. */
export function narrowScopes (requested: string[], allowed: readonly string[]): string[] {
  const refused = requested.filter((scope) => !allowed.includes(scope))
  if (refused.length > 0) throw new InvalidScope(`scope not granted: ${refused.join(' ')}`)
  return requested
}
