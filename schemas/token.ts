import { Type, type Static } from '@sinclair/typebox'
import { Text } from './common.js'

export const TokenPairSchema = Type.Object({
  access_token: Type.String(),
  refresh_token: Type.String(),
  token_type: Type.Literal('bearer'),
  expires_in: Type.Integer({ description: 'Seconds until the access token expires', examples: [1800] })
}, { $id: 'TokenPair', title: 'TokenPair' })

export type TokenPair = Static<typeof TokenPairSchema>

/** The OAuth 2.0 password grant form (RFC 6749 section 4.3); `username` carries the email. */
export const LoginFormSchema = Type.Object({
  username: Text({ minLength: 1, maxLength: 254, description: 'The account email', examples: ['ada@example.com'] }),
  password: Text({ maxLength: 1024, examples: ['correct horse battery'] }),
  grant_type: Type.Optional(Type.Literal('password')),
  scope: Type.Optional(Text({ maxLength: 1024, description: 'Accepted and ignored: tokens carry the account\'s scopes' })),
  client_id: Type.Optional(Text({ maxLength: 256 })),
  client_secret: Type.Optional(Text({ maxLength: 256 }))
}, { additionalProperties: false })

export const RefreshRequestSchema = Type.Object({
  refresh_token: Text({ minLength: 1, maxLength: 4096, description: 'The refresh_token of the last pair', examples: ['eyJhbGciOiJIUzI1NiJ9...'] })
}, { additionalProperties: false })
