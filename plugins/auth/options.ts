import { Type, type Static } from '@sinclair/typebox'
import { readOptions } from '../options.js'
import { InvalidAuthOptions } from './errors.js'

export const AuthOptionsSchema = Type.Object({
  /** HS256 signing key (SECRET_KEY); a random one per process when absent, with a warning (tokens die at restart). */
  secret: Type.Optional(Type.String({ minLength: 1, errorMessage: 'must be a non-empty string' })),
  accessTokenMinutes: Type.Integer({ minimum: 1, default: 30, errorMessage: 'must be an integer of at least 1' }),
  refreshTokenDays: Type.Integer({ minimum: 1, default: 14, errorMessage: 'must be an integer of at least 1' })
})

export type AuthOptions = Partial<Static<typeof AuthOptionsSchema>>

export const resolveAuthOptions = (opts: AuthOptions) => readOptions(AuthOptionsSchema, opts, InvalidAuthOptions)
