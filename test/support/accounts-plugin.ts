import Fastify from 'fastify'
import type { Test } from 'tap'
import type { MailMessage } from '../../mail/senders.js'
import authPlugin from '../../plugins/auth/index.js'
import dbPlugin from '../../plugins/db.js'
import accountsPlugin from '../../routes/accounts/index.js'
import type { AccountsOptions } from '../../routes/accounts/options.js'
import { freshDatabase } from './database.js'

/**
 * The accounts plugin in an app of its own, on a clock the test moves (`clock.now`) and with an
 * inbox for its mails: for what depends on time, such as a link's expiry. Not yet ready.
 */
export async function clockedAccounts (t: Test, options: AccountsOptions = {}) {
  const clock = { now: Date.now() }
  const inbox: MailMessage[] = []
  const app = Fastify({ logger: false })
  await app.register(dbPlugin, { client: await freshDatabase(t), clock: () => new Date(clock.now) })
  await app.register(authPlugin, { secret: 'a clocked accounts test, 32 bytes or more' })
  await app.register(accountsPlugin, {
    prefix: '/api/v1', ...options, sendMail: async (message) => { inbox.push(message) }
  })
  t.teardown(() => app.close())
  return { app, clock, inbox }
}
