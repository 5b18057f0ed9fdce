import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { GRANT_TYPES } from '../schemas/token.js'
import { documentRoutes } from './docs.js'
import { readOptions } from '../http/options.js'
import { trailingSlashAliases } from '../http/trailing-slash.js'
import type { App } from '../http/types.js'
import { defineProblems } from '../http/problem-error.js'

export const wellKnownProblems = defineProblems({ InvalidWellKnownOptions: { code: 'WELL_KNOWN_INVALID_OPTIONS', message: 'well-known plugin: %s' } })
export const { InvalidWellKnownOptions } = wellKnownProblems

export const WellKnownOptionsSchema = Type.Object({
  /** Where the accounts plugin is registered: its token endpoint is `<accountsPrefix>/auth/login`. */
  accountsPrefix: Type.String({ pattern: '^(/[A-Za-z0-9._~-]+)*$', default: '/api/v1', errorMessage: 'must be a path such as /api/v1, without a trailing slash' }),
  /** The origin clients reach the server at; the request's own when absent, and the metadata then answered `no-store`. */
  publicUrl: Type.Optional(Type.String({ pattern: '^https?://[^/?#]+$', errorMessage: 'must be an origin such as https://api.example.com' })),
  scopes: Type.Array(Type.String({ minLength: 1 }), { default: ['me'], errorMessage: 'must be an array of scope names' })
})

export type WellKnownOptions = Partial<typeof WellKnownOptionsSchema.static>

const CLIENT_AUTH = ['none', 'client_secret_basic', 'client_secret_post']
// Clients and verifiers cache these; an hour bounds how long a rotated key stays unknown to them.
const CACHE = 'public, max-age=3600'
// An origin taken from the request's headers is the requester's own: no cache may hand it to anyone else.
const UNCACHED = 'no-store'

/** RFC 8414 metadata and, with EdDSA or ES256, the JWK Set; at the root, after authPlugin. */
async function wellKnown (app: App, opts: WellKnownOptions) {
  const { accountsPrefix, publicUrl, scopes } = readOptions(WellKnownOptionsSchema, opts, InvalidWellKnownOptions)
  const jwks = app.plinthTokens.jwks
  documentRoutes(app)
  trailingSlashAliases(app)
  // Without PUBLIC_URL the issuer follows the client-settable Host: fine behind a proxy that fixes Host, not for pinning the issuer.
  const origin = (request: FastifyRequest) => publicUrl ?? `${request.protocol}://${request.host}`
  const metadataCache = publicUrl === undefined ? UNCACHED : CACHE

  app.get('/.well-known/oauth-authorization-server', {
    schema: {
      operationId: 'getAuthorizationServerMetadata',
      summary: 'OAuth 2.0 authorization server metadata (RFC 8414)',
      tags: ['auth'],
      response: { 200: Type.Object({}, { additionalProperties: true, description: 'The RFC 8414 metadata document' }) }
    }
  }, async function metadata (request, reply) {
    const base = origin(request)
    reply.header('cache-control', metadataCache)
    return {
      issuer: base,
      token_endpoint: `${base}${accountsPrefix}/auth/login`,
      revocation_endpoint: `${base}${accountsPrefix}/auth/revoke`,
      ...(jwks ? { jwks_uri: `${base}/.well-known/jwks.json` } : {}),
      grant_types_supported: [...GRANT_TYPES],
      // No authorization endpoint: the password and refresh grants need none.
      response_types_supported: [],
      token_endpoint_auth_methods_supported: CLIENT_AUTH,
      revocation_endpoint_auth_methods_supported: CLIENT_AUTH,
      scopes_supported: scopes
    }
  })

  if (jwks) {
    app.get('/.well-known/jwks.json', {
      schema: {
        operationId: 'getJwks',
        summary: 'The public keys that verify access tokens (RFC 7517 JWK Set)',
        tags: ['auth'],
        response: { 200: Type.Object({ keys: Type.Array(Type.Object({}, { additionalProperties: true })) }) }
      }
    }, async function keySet (_request, reply) {
      reply.header('cache-control', CACHE)
      return jwks
    })
  }
}

export default fp(wellKnown, {
  name: 'plinth-well-known',
  fastify: '5.x',
  dependencies: ['plinth-auth'],
  decorators: { fastify: ['plinthTokens'] },
  encapsulate: true
})
