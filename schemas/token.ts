import { Type, type Static } from '@sinclair/typebox'
import { Text } from './common.js'
import { ProblemSchema } from './error.js'

export const TokenPairSchema = Type.Object({
  access_token: Type.String(),
  refresh_token: Type.String(),
  token_type: Type.Literal('bearer'),
  expires_in: Type.Integer({ description: 'Seconds until the access token expires', examples: [1800] }),
  scope: Type.Optional(Type.String({ description: 'The scopes the access token carries, space-separated', examples: ['me'] }))
}, { $id: 'TokenPair', title: 'TokenPair' })

export type TokenPair = Static<typeof TokenPairSchema>

export const GRANT_TYPES = ['password', 'refresh_token'] as const

// The route checks which fields a grant needs, so a missing one is an OAuth `invalid_request`.
/** The token endpoint's form (RFC 6749 4.3 and 6), `username` carrying the email; unknown fields are dropped (3.2). */
export const TokenRequestSchema = Type.Object({
  grant_type: Type.Optional(Text({ maxLength: 64, description: `${GRANT_TYPES.join(' or ')}; password when absent`, examples: ['password'] })),
  username: Type.Optional(Text({ minLength: 1, maxLength: 254, description: 'The account email (password grant)', examples: ['ada@example.com'] })),
  password: Type.Optional(Text({ maxLength: 1024, description: 'The password (password grant)', examples: ['correct horse battery'] })),
  refresh_token: Type.Optional(Text({ minLength: 1, maxLength: 4096, description: 'The refresh_token of the last pair (refresh grant)' })),
  scope: Type.Optional(Text({ maxLength: 1024, description: 'Space-separated scopes to narrow the token to; each must be granted to the account' })),
  client_id: Type.Optional(Text({ maxLength: 256, description: 'Any value: there is no client registry, so every client is public' })),
  client_secret: Type.Optional(Text({ maxLength: 256 }))
})

export type TokenRequest = Static<typeof TokenRequestSchema>

export const OAUTH_ERRORS = ['invalid_request', 'invalid_client', 'invalid_grant', 'unsupported_grant_type', 'invalid_scope'] as const
export type OAuthErrorCode = typeof OAUTH_ERRORS[number]

/** RFC 6749 section 5.2's error, with the problem document's members: one body for OAuth clients and for people. */
export const OAuthErrorSchema = Type.Object({
  error: Type.Unsafe<OAuthErrorCode>({ type: 'string', enum: [...OAUTH_ERRORS], description: 'The RFC 6749 error code' }),
  error_description: Type.String({ description: 'What went wrong, as detail says' }),
  ...ProblemSchema.properties
}, { $id: 'OAuthError', title: 'OAuthError', description: 'RFC 6749 section 5.2 error, also an RFC 9457 problem document' })

export type OAuthError = Static<typeof OAuthErrorSchema>

/** RFC 7009 section 2.1: the token to revoke, and what the client thinks it is. */
export const RevocationRequestSchema = Type.Object({
  token: Type.Optional(Text({ minLength: 1, maxLength: 4096, description: 'A refresh or access token: its session ends' })),
  token_type_hint: Type.Optional(Text({ maxLength: 64, description: 'refresh_token or access_token; a hint only', examples: ['refresh_token'] })),
  client_id: Type.Optional(Text({ maxLength: 256 })),
  client_secret: Type.Optional(Text({ maxLength: 256 }))
})

export const RefreshRequestSchema = Type.Object({
  refresh_token: Text({ minLength: 1, maxLength: 4096, description: 'The refresh_token of the last pair', examples: ['eyJhbGciOiJIUzI1NiJ9...'] })
}, { additionalProperties: false })

/** /auth/refresh's body: the refresh token and, as at the token endpoint's refresh grant, an optional narrowing. */
export const RefreshScopeRequestSchema = Type.Object({
  ...RefreshRequestSchema.properties,
  scope: TokenRequestSchema.properties.scope
}, { additionalProperties: false })
