import type { Static } from '@sinclair/typebox'
import type { AccountTokenRepository } from '../../db/account-tokens.js'
import type { SessionRepository } from '../../db/sessions.js'
import { scopeList, type UserRepository, type UserRow } from '../../db/users.js'
import type { User } from '../../schemas/user.js'
import type { idempotentCreates } from '../../http/idempotency.js'
import type { PlinthMetrics } from '../../plugins/metrics.js'
import type { QueueBound } from '../../concurrency/gate.js'
import type { AccountMail } from '../../mail/account-mail.js'
import type { AccountsOptionsSchema } from './options.js'
import type { accountsSchemas } from './schemas.js'

export interface AccountsContext {
  users: UserRepository
  sessions: SessionRepository
  tokens: AccountTokenRepository
  mail: AccountMail
  schemas: ReturnType<typeof accountsSchemas>
  passwordMinLength: number
  loginMaxFailures: number
  /** From half the hash queue on, the hashes one account or one address may have waiting; 0: no share. */
  maxHashWaitingPerClient: number
  rateLimits: Static<typeof AccountsOptionsSchema>['rateLimits']
  defaultLimit: number
  maxLimit: number
  requireVerified: boolean
  requireIfMatch: boolean
  idempotent: ReturnType<typeof idempotentCreates>
  count: PlinthMetrics['count']
  /** overloadPlugin's bound on the password-hash queue, if it is registered with one. */
  passwordQueue?: QueueBound
}

/** The public shape of an account; the response schema drops anything else by construction. */
export const toPublic = (user: UserRow): User => ({
  id: user.id,
  email: user.email,
  is_active: user.is_active,
  is_superuser: user.is_superuser,
  scopes: scopeList(user.scopes),
  is_verified: user.is_verified
})
