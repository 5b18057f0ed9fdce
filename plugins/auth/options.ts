import { Type, type Static } from '@sinclair/typebox'
import { readOptions } from '../../http/options.js'
import { PG_INT_MAX } from '../../schemas/common.js'
import { InvalidAuthOptions } from './errors.js'
import { ALGORITHMS, MIN_SECRET_BYTES } from './keys.js'

const Optional = (description: string) => Type.Optional(Type.String({ minLength: 1, errorMessage: 'must be a non-empty string', description }))

export const AuthOptionsSchema = Type.Object({
  algorithm: Type.Union(ALGORITHMS.map((name) => Type.Literal(name)), { default: 'HS256', errorMessage: `must be one of ${ALGORITHMS.join(', ')}` }),
  secret: Optional('HS256 signing key (SECRET_KEY); a random one per process when absent, with a warning (tokens die at restart)'),
  privateKey: Optional('EdDSA or ES256 signing key, PEM or JWK (JWT_PRIVATE_KEY)'),
  keyId: Optional('The kid of privateKey; its JWK kid, else its RFC 7638 thumbprint'),
  previousKeys: Optional('Keys still accepted and published after a rotation: a JWK Set or a JSON array of JWKs (JWT_PREVIOUS_KEYS)'),
  issuer: Optional('The iss claim to sign and require (JWT_ISSUER)'),
  audience: Optional('The aud claim to sign and require (JWT_AUDIENCE)'),
  /** Whether the guard checks that an access token's session is still live (SESSION_CHECK). */
  sessionCheck: Type.Boolean({ default: true, errorMessage: 'must be true or false' }),
  accessTokenMinutes: Type.Integer({ minimum: 1, maximum: PG_INT_MAX, default: 30, errorMessage: 'must be an integer of at least 1' }),
  refreshTokenDays: Type.Integer({ minimum: 1, maximum: PG_INT_MAX, default: 14, errorMessage: 'must be an integer of at least 1' })
})

/** The fewest bytes `secret` may have: a bound TypeBox's minLength, which counts characters, cannot state. */
export { MIN_SECRET_BYTES }

export type AuthOptions = Partial<Static<typeof AuthOptionsSchema>>

export function resolveAuthOptions (opts: AuthOptions) {
  const options = readOptions(AuthOptionsSchema, opts, InvalidAuthOptions)
  // Its length is all the message tells: the secret itself stays out of logs.
  const bytes = options.secret === undefined ? undefined : Buffer.byteLength(options.secret)
  if (bytes !== undefined && bytes < MIN_SECRET_BYTES) throw new InvalidAuthOptions(`secret must be at least ${MIN_SECRET_BYTES} bytes (got ${bytes})`)
  return options
}
