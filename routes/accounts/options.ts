import { Type, type Static } from '@sinclair/typebox'
import type { SendMail } from '../../mail/senders.js'
import { TEMPLATE_NAMES, withOverrides } from '../../mail/templates.js'
import { PageLimitOptions, pageLimits, readOptions, shown } from '../../http/options.js'
import { PG_INT_MAX } from '../../schemas/common.js'
import { InvalidAccountsOptions } from './errors.js'
import { ConditionalOptions } from '../../http/conditional.js'
import { IdempotencyOptions } from '../../http/idempotency.js'

const Count = (min: number, fallback: number, max = PG_INT_MAX) =>
  Type.Integer({ minimum: min, maximum: max, default: fallback, errorMessage: `must be an integer of at least ${min}` })

export const AccountsOptionsSchema = Type.Object({
  passwordMinLength: Count(1, 8, 1024),
  /** Failed password checks (logins, current_password) per email and client address per window before 429; 0 disables the limit. */
  loginMaxFailures: Count(0, 10),
  loginWindowSeconds: Count(1, 900),
  /** From half the bounded hash queue on, the hashes one account or one client address may have waiting before 429; 0: no share. */
  maxHashWaitingPerClient: Count(0, 4),
  ...PageLimitOptions(100, 20),
  /** How often unusable refresh records and expired login counters are deleted; at most setInterval's longest delay. */
  purgeIntervalMs: Count(1000, 3_600_000, 2_147_483_647),
  /** A revoked refresh token presented again revokes its whole family (RFC 9700 4.14.2). */
  reuseDetection: Type.Boolean({ default: false, errorMessage: 'must be true or false' }),
  /** With reuse detection, a token presented again this soon after its rotation is refused, its family kept (0: none). */
  reuseIntervalSeconds: Count(0, 10, 3600),
  /** Requests per client address and window on each unauthenticated route; 0 turns a route's limit off. */
  rateLimits: Type.Object({
    windowSeconds: Count(1, 60, 86400),
    register: Count(0, 20),
    /** The token endpoint, both grants. */
    token: Count(0, 60),
    refresh: Count(0, 120),
    /** /auth/revoke and /auth/logout, each. */
    revoke: Count(0, 60),
    /** /auth/forgot-password and /auth/reset-password, each. */
    passwordReset: Count(0, 10),
    /** /auth/verify/request, /auth/verify and /auth/confirm-email, each. */
    verify: Count(0, 10),
    /** PATCH and DELETE /users/me together: the routes that check current_password. */
    passwordCheck: Count(0, 10),
    /** Mails of one kind to one address per `mailWindowSeconds`, whoever asks; past it no mail is sent. */
    mailsPerEmail: Count(0, 5),
    mailWindowSeconds: Count(1, 3600, 604800)
  }, { default: {}, additionalProperties: false }),
  /** Login refuses accounts whose email is not verified (and mails them a link). */
  requireVerified: Type.Boolean({ default: false, errorMessage: 'must be true or false' }),
  ...ConditionalOptions,
  ...IdempotencyOptions,
  resetTokenMinutes: Count(1, 30, 10080),
  verifyTokenMinutes: Count(1, 1440, 43200),
  mail: Type.Object({
    from: Type.String({ minLength: 3, default: 'plinth <no-reply@localhost>', errorMessage: 'must be a sender such as "Example <no-reply@example.com>"' }),
    /** Where links lead: the front end that serves /reset-password, /verify-email and /confirm-email, never the request's Host. */
    appUrl: Type.String({ pattern: '^https?://[^?#]+$', default: 'http://localhost:8000', errorMessage: 'must be an http(s) URL without query or fragment' }),
    timeoutMs: Count(1, 10_000, 600_000),
    templates: Type.Object(Object.fromEntries(TEMPLATE_NAMES.map((name) => [name, Type.Optional(Type.Object({
      subject: Type.Optional(Type.String({ minLength: 1 })),
      text: Type.Optional(Type.String({ minLength: 1 })),
      html: Type.Optional(Type.String({ minLength: 1 }))
    }, { additionalProperties: false }))])), { default: {}, additionalProperties: false })
  }, { default: {}, additionalProperties: false }),
  firstSuperuser: Type.Optional(Type.Object({ email: Type.String({ minLength: 3 }), password: Type.String({ minLength: 1 }) }))
})

type Resolved = Static<typeof AccountsOptionsSchema>

export type AccountsOptions = Partial<Omit<Resolved, 'mail' | 'rateLimits'>> & {
  mail?: Partial<Resolved['mail']>
  rateLimits?: Partial<Resolved['rateLimits']>
  /** Sends account mail (nodemailer's or your own); without it each message is written to the log. */
  sendMail?: SendMail
  /** @deprecated Pass `clock` to the db plugin instead; when given, this plugin reads all its time from it. */
  now?: () => Date
}

function aFunction<T> (opts: AccountsOptions, key: 'sendMail' | 'now'): T | undefined {
  const value = opts[key]
  if (value !== undefined && typeof value !== 'function') throw new InvalidAccountsOptions(`${key} must be a function (got ${shown(value)})`)
  return value as T | undefined
}

export function resolveAccountsOptions (opts: AccountsOptions) {
  const options = readOptions(AccountsOptionsSchema, opts, InvalidAccountsOptions)
  const { templates, ...mail } = options.mail
  return {
    ...options,
    ...pageLimits(options, AccountsOptionsSchema.properties.defaultLimit.fallback, InvalidAccountsOptions),
    mail: { ...mail, appUrl: mail.appUrl.replace(/\/+$/, ''), templates: withOverrides(templates) },
    sendMail: aFunction<SendMail>(opts, 'sendMail'),
    now: aFunction<() => Date>(opts, 'now') ?? (() => new Date())
  }
}
