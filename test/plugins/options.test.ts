import Fastify from 'fastify'
import t from 'tap'
import { accountsPlugin, authPlugin, catalogPlugin, dbPlugin, resourcePlugin } from '../../index.js'
import { resolveAccountsOptions } from '../../routes/accounts/options.js'
import { resolveAuthOptions } from '../../plugins/auth/options.js'
import { freshDatabase } from '../support/database.js'

// Every plugin reads its options one way: defaults filled in, and the first bad option is a coded
// boot error naming the plugin, the option, the rule and the value.

t.test('the auth plugin refuses options that would weaken or break its tokens', async (t) => {
  const cases: Array<[object, string]> = [
    [{ secret: '' }, 'auth plugin: secret must be a non-empty string (got "")'],
    [{ secret: 42 }, 'auth plugin: secret must be a non-empty string (got 42)'],
    [{ secret: 'a host secret' }, 'auth plugin: secret must be at least 32 bytes (got 13)'],
    [{ accessTokenMinutes: 0 }, 'auth plugin: accessTokenMinutes must be an integer of at least 1 (got 0)'],
    [{ accessTokenMinutes: '30' }, 'auth plugin: accessTokenMinutes must be an integer of at least 1 (got "30")'],
    [{ refreshTokenDays: 1.5 }, 'auth plugin: refreshTokenDays must be an integer of at least 1 (got 1.5)'],
    [{ refreshTokenDays: Number.NaN }, 'auth plugin: refreshTokenDays must be an integer of at least 1 (got NaN)'],
    [{ algorithm: 'RS256' }, 'auth plugin: algorithm must be one of HS256, EdDSA, ES256 (got "RS256")'],
    [{ algorithm: 'EdDSA', issuer: '' }, 'auth plugin: issuer must be a non-empty string (got "")']
  ]
  for (const [options, message] of cases) {
    t.throws(() => resolveAuthOptions(options), { code: 'AUTH_INVALID_OPTIONS', message }, JSON.stringify(options))
  }
  t.same(resolveAuthOptions({}), { algorithm: 'HS256', sessionCheck: true, accessTokenMinutes: 30, refreshTokenDays: 14 })
})

t.test('the accounts plugin names the bad option, defaults the rest', async (t) => {
  const cases: Array<[object, string]> = [
    [{ passwordMinLength: 0 }, 'accounts plugin: passwordMinLength must be an integer of at least 1 (got 0)'],
    [{ loginMaxFailures: -1 }, 'accounts plugin: loginMaxFailures must be an integer of at least 0 (got -1)'],
    [{ reuseDetection: 'yes' }, 'accounts plugin: reuseDetection must be true or false (got "yes")'],
    [{ maxLimit: 0 }, 'accounts plugin: maxLimit must be an integer from 1 to 2147483647 (got 0)'],
    [{ defaultLimit: 50, maxLimit: 10 }, 'accounts plugin: defaultLimit must be an integer from 1 to maxLimit (10) (got 50)'],
    [{ firstSuperuser: { email: 'root@example.com' } }, 'accounts plugin: firstSuperuser.password expected required property (got undefined)']
  ]
  for (const [options, message] of cases) {
    t.throws(() => resolveAccountsOptions(options), { code: 'ACCOUNTS_INVALID_OPTIONS', message }, JSON.stringify(options))
  }
  const { mail, sendMail, now, ...rest } = resolveAccountsOptions({ maxLimit: 10 })
  t.same(rest, {
    passwordMinLength: 8,
    loginMaxFailures: 10,
    loginWindowSeconds: 900,
    maxLimit: 10,
    defaultLimit: 10,
    purgeIntervalMs: 3_600_000,
    reuseDetection: false,
    reuseIntervalSeconds: 10,
    maxHashWaitingPerClient: 4,
    rateLimits: { windowSeconds: 60, register: 20, token: 60, refresh: 120, revoke: 60, passwordReset: 10, verify: 10, passwordCheck: 10, mailsPerEmail: 5, mailWindowSeconds: 3600 },
    requireVerified: false,
    requireIfMatch: false,
    idempotencyTtlHours: 24,
    resetTokenMinutes: 30,
    verifyTokenMinutes: 1440
  }, 'the default page never exceeds the maximum')
  t.match(mail, { from: 'plinth <no-reply@localhost>', appUrl: 'http://localhost:8000', timeoutMs: 10_000, templates: { 'reset-password': { subject: 'Reset your password' } } })
  t.equal(sendMail, undefined, 'without sendMail, mails go to the log')
  t.type(now(), Date, 'the clock is the real one')
})

t.test('a bad option of any plugin fails the host\'s boot, and no route of it is added', async (t) => {
  const boots: Array<[string, (app: ReturnType<typeof Fastify>) => void, string]> = [
    ['AUTH_INVALID_OPTIONS', (app) => app.register(authPlugin, { accessTokenMinutes: -5 }), 'auth plugin: accessTokenMinutes'],
    ['ACCOUNTS_INVALID_OPTIONS', (app) => app.register(authPlugin, {}).register(accountsPlugin, { prefix: '/api', loginWindowSeconds: 0 }), 'accounts plugin: loginWindowSeconds'],
    ['CATALOG_INVALID_OPTIONS', (app) => app.register(catalogPlugin, { prefix: '/api', defaultLimit: 101 }), 'catalog plugin: defaultLimit'],
    ['RESOURCE_INVALID_OPTIONS', (app) => app.register(resourcePlugin, { prefix: '/api', name: 'notes', createTable: 1 as unknown as boolean }), 'resource plugin: createTable']
  ]
  for (const [code, register, start] of boots) {
    const app = Fastify({ logger: false })
    t.teardown(() => app.close())
    await app.register(dbPlugin, { client: await freshDatabase(t) })
    register(app)
    const error = await app.ready().then(() => undefined, (err: Error & { code?: string }) => err)
    t.equal(error?.code, code)
    t.ok(error?.message.startsWith(start), String(error?.message))
    t.notOk(app.hasRoute({ method: 'GET', url: '/api/items' }) || app.hasRoute({ method: 'GET', url: '/api/notes/' }), `${code}: no route`)
  }
})
