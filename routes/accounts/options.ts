import { Type, type Static } from '@sinclair/typebox'
import { PageLimitOptions, pageLimits, readOptions } from '../../plugins/options.js'
import { InvalidAccountsOptions } from './errors.js'

const Count = (min: number, fallback: number) => Type.Integer({ minimum: min, default: fallback, errorMessage: `must be an integer of at least ${min}` })

export const AccountsOptionsSchema = Type.Object({
  passwordMinLength: Count(1, 8),
  /** Failed logins per email and address per window before 429; 0 disables the limit. */
  loginMaxFailures: Count(0, 10),
  loginWindowSeconds: Count(1, 900),
  ...PageLimitOptions(100),
  /** How often unusable refresh records and expired login counters are deleted. */
  purgeIntervalMs: Count(1000, 3_600_000),
  /** A revoked refresh token presented again revokes its whole family (RFC 9700 4.14.2). */
  reuseDetection: Type.Boolean({ default: false, errorMessage: 'must be true or false' }),
  /** With reuse detection, a token presented again this soon after its rotation is refused, its family kept (0: none). */
  reuseIntervalSeconds: Count(0, 10),
  /** Requests per client address and window on each unauthenticated route; 0 turns a route's limit off. */
  rateLimits: Type.Object({
    windowSeconds: Count(1, 60),
    register: Count(0, 20),
    /** The token endpoint, both grants. */
    token: Count(0, 60),
    refresh: Count(0, 120),
    /** /auth/revoke and /auth/logout, each. */
    revoke: Count(0, 60)
  }, { default: {}, additionalProperties: false }),
  firstSuperuser: Type.Optional(Type.Object({ email: Type.String({ minLength: 3 }), password: Type.String({ minLength: 1 }) }))
})

export type AccountsOptions = Partial<Static<typeof AccountsOptionsSchema>>

export function resolveAccountsOptions (opts: AccountsOptions) {
  const options = readOptions(AccountsOptionsSchema, opts, InvalidAccountsOptions)
  return { ...options, ...pageLimits(options, 20, InvalidAccountsOptions) }
}
