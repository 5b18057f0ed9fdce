import type { FastifyRequest } from 'fastify'
import { newAccountToken, type AccountTokenRepository } from '../db/account-tokens.js'
import type { Clock } from '../db/clock.js'
import type { RateCounter } from '../db/rate-limits.js'
import type { UserRow } from '../db/users.js'
import type { Mailer } from './mailer.js'
import type { TemplateName } from './templates.js'

export interface AccountMailOptions {
  tokens: AccountTokenRepository
  counter: RateCounter
  mailer: Mailer
  appUrl: string
  resetTokenMinutes: number
  verifyTokenMinutes: number
  mailsPerEmail: number
  mailWindowSeconds: number
  clock: Clock
}

/** "30 minutes", "24 hours": how long a link works, as a message says it. */
export function duration (minutes: number) {
  if (minutes % 60 !== 0) return minutes === 1 ? '1 minute' : `${minutes} minutes`
  return minutes === 60 ? '1 hour' : `${minutes / 60} hours`
}

/** The links accounts mail: a token stored as its hash, in a link to the front end's page for it. */
export function accountMail (options: AccountMailOptions) {
  const { tokens, counter, mailer, clock } = options

  /** Seconds until this address may get another mail of this kind, or 0 while it is under the cap. */
  async function capped (kind: TemplateName, email: string): Promise<number> {
    if (options.mailsPerEmail === 0) return 0
    const { current, ttl } = await counter.hit(`mail:${kind} ${email}`, options.mailWindowSeconds * 1000)
    return current > options.mailsPerEmail ? Math.max(1, Math.ceil(ttl / 1000)) : 0
  }

  function send (request: FastifyRequest, kind: TemplateName, email: string, token: string, minutes: number) {
    const link = `${options.appUrl}/${kind}?token=${token}`
    mailer.send(request.log, kind, email, { link, email, expires: duration(minutes) })
  }

  const expiry = (minutes: number) => new Date(clock().getTime() + minutes * 60_000)

  return {
    /** A reset link to the active account of `email`, if any, sent after the answer so its timing tells nothing of the account. */
    reset (request: FastifyRequest, email: string): void {
      const address = email.toLowerCase()
      mailer.later(request.log, async () => {
        if (await capped('reset-password', address) > 0) {
          request.log.info('reset link not sent: this address had its share of mails for now')
          return
        }
        const { token, hash } = newAccountToken()
        if (await tokens.issueReset(address, hash, expiry(options.resetTokenMinutes))) {
          send(request, 'reset-password', address, token, options.resetTokenMinutes)
        }
      })
    },

    /** A verification link to the user's current email; the seconds to wait instead when the address had its share. */
    async verify (request: FastifyRequest, user: UserRow): Promise<number> {
      const wait = await capped('verify-email', user.email)
      if (wait > 0) return wait
      const { token, hash } = newAccountToken()
      await tokens.issueVerify(user.id, hash, expiry(options.verifyTokenMinutes))
      send(request, 'verify-email', user.email, token, options.verifyTokenMinutes)
      return 0
    },

    /** Counts an email change asked for against the caps of its two mails: the capped address and the seconds to wait, or null. */
    async emailChangeWait (user: UserRow, address: string): Promise<{ email: string, wait: number } | null> {
      // Counted even when no notice goes, so that one account asks for at most the cap's changes per window.
      const notice = await capped('email-change-notice', user.email)
      if (notice > 0) return { email: user.email, wait: notice }
      const link = await capped('confirm-email', address)
      return link > 0 ? { email: address, wait: link } : null
    },

    // The link lives as long as a reset link, since following it can hand over the account.
    /** A link to `address` that moves the user there, and a notice to the current email when it was ever proved. */
    async changeEmail (request: FastifyRequest, user: UserRow, address: string): Promise<void> {
      const { token, hash } = newAccountToken()
      await tokens.issueEmailChange(user.id, address, hash, expiry(options.resetTokenMinutes))
      send(request, 'confirm-email', address, token, options.resetTokenMinutes)
      // An address nobody proved may belong to someone else: it gets no mail its owner never asked for.
      if (user.is_verified) mailer.send(request.log, 'email-change-notice', user.email, { link: '', email: user.email, expires: '', new_email: address })
    }
  }
}

export type AccountMail = ReturnType<typeof accountMail>
