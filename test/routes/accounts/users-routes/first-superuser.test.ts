import { eq } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { buildApp } from '../../../../app.js'
import type { DatabaseClient } from '../../../../db/client.js'
import { users } from '../../../../db/schema.js'
import { captureLogs, login, register } from '../../../support/app.js'
import { freshDatabase } from '../../../support/database.js'

const settings = { FIRST_SUPERUSER_EMAIL: 'Admin@Example.com', FIRST_SUPERUSER_PASSWORD: 'first admin password' }

t.test('the first superuser is created at startup, once, across restarts', async (t) => {
  const database = await freshDatabase(t)
  const start = async (overrides = {}) => {
    const logs = captureLogs()
    const app = await buildApp({ ...settings, ...overrides }, { database, logger: logs.logger })
    await app.ready()
    return { app, logs }
  }

  const first = await start()
  t.ok(first.logs.lines.some((line) => line.msg === 'first superuser created'))
  const session = await login(first.app, 'admin@example.com', 'first admin password')
  const me = (await first.app.inject({ method: 'GET', url: '/api/v1/users/me', headers: session.headers })).json()
  t.same(me, { id: me.id, email: 'admin@example.com', is_active: true, is_superuser: true, scopes: ['me'], is_verified: true })
  await first.app.close()

  // A restart with a changed password in the environment leaves the account as it is.
  const second = await start({ FIRST_SUPERUSER_PASSWORD: 'a changed password' })
  t.notOk(second.logs.lines.some((line) => line.msg === 'first superuser created'))
  t.equal((await database.db.select().from(users)).length, 1, 'no duplicate')
  t.ok(await login(second.app, 'admin@example.com', 'first admin password'), 'the original password still works')
  await t.rejects(login(second.app, 'admin@example.com', 'a changed password'), /400 .*invalid_grant/)
  await second.app.close()
})

t.test('an existing regular account with that email is never promoted', async (t) => {
  const database = await freshDatabase(t)
  const plain = await buildApp({}, { database, logger: false })
  await register(plain, 'admin@example.com', 'someone else registered')
  await plain.close()

  const logs = captureLogs()
  const app = await buildApp(settings, { database, logger: logs.logger })
  t.teardown(() => app.close())
  await app.ready()
  const session = await login(app, 'admin@example.com', 'someone else registered')
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/users', headers: session.headers })).statusCode, 403)
  t.ok(logs.lines.some((line) => line.level === 40 && /not a superuser; left unchanged/.test(String(line.msg))))
})

t.test('nothing is seeded unless both variables are set', async (t) => {
  const database = await freshDatabase(t)
  const app = await buildApp({ FIRST_SUPERUSER_EMAIL: 'admin@example.com' }, { database, logger: false })
  t.teardown(() => app.close())
  await app.ready()
  t.equal((await database.db.select().from(users)).length, 0)
})

/** An app on `database` with FIRST_SUPERUSER_* set, started, and its log lines. */
async function start (t: Test, database: DatabaseClient) {
  const logs = captureLogs()
  const app = await buildApp(settings, { database, logger: logs.logger })
  t.teardown(() => app.close())
  await app.ready()
  return { app, created: () => logs.lines.some((line) => line.msg === 'first superuser created') }
}

const emails = async (database: DatabaseClient) => (await database.db.select({ email: users.email }).from(users).orderBy(users.id)).map((row) => row.email)

t.test('a deleted bootstrap superuser is not created again at the next start', async (t) => {
  const database = await freshDatabase(t)
  const first = await start(t, database)
  const admin = await login(first.app, 'admin@example.com', 'first admin password')
  const other = await register(first.app, 'second@example.com')
  const promoted = await first.app.inject({ method: 'PATCH', url: `/api/v1/users/${other.id}`, headers: admin.headers, payload: { is_superuser: true } })
  t.equal(promoted.statusCode, 200)
  const second = await login(first.app, 'second@example.com')
  const adminId = (await first.app.inject({ method: 'GET', url: '/api/v1/users/me', headers: admin.headers })).json().id
  t.equal((await first.app.inject({ method: 'DELETE', url: `/api/v1/users/${adminId}`, headers: second.headers })).statusCode, 204)
  await first.app.close()

  const restarted = await start(t, database)
  t.notOk(restarted.created(), 'no superuser created')
  t.same(await emails(database), ['second@example.com'], 'the deleted account stays deleted')
  await t.rejects(login(restarted.app, 'admin@example.com', 'first admin password'), /400 .*invalid_grant/, 'the environment password opens nothing')
})

t.test('a bootstrap superuser whose email changed is not created again under the old one', async (t) => {
  const database = await freshDatabase(t)
  const first = await start(t, database)
  const admin = await login(first.app, 'admin@example.com', 'first admin password')
  const { id } = (await first.app.inject({ method: 'GET', url: '/api/v1/users/me', headers: admin.headers })).json()
  const moved = await first.app.inject({ method: 'PATCH', url: `/api/v1/users/${id}`, headers: admin.headers, payload: { email: 'boss@example.com', is_verified: true } })
  t.equal(moved.statusCode, 200)
  await first.app.close()

  const restarted = await start(t, database)
  t.notOk(restarted.created(), 'no superuser created')
  t.same(await emails(database), ['boss@example.com'])
  await t.rejects(login(restarted.app, 'admin@example.com', 'first admin password'), /400 .*invalid_grant/)
})

t.test('a password changed through the API is never reset to the environment\'s', async (t) => {
  const database = await freshDatabase(t)
  const first = await start(t, database)
  const admin = await login(first.app, 'admin@example.com', 'first admin password')
  const { id } = (await first.app.inject({ method: 'GET', url: '/api/v1/users/me', headers: admin.headers })).json()
  const changed = await first.app.inject({ method: 'PATCH', url: `/api/v1/users/${id}`, headers: admin.headers, payload: { password: 'a password of my own' } })
  t.equal(changed.statusCode, 200)
  await first.app.close()

  const restarted = await start(t, database)
  t.notOk(restarted.created())
  t.ok(await login(restarted.app, 'admin@example.com', 'a password of my own'), 'the new password works')
  await t.rejects(login(restarted.app, 'admin@example.com', 'first admin password'), /400 .*invalid_grant/, 'the environment\'s does not')
})

t.test('when any superuser exists, none is created, whatever its email', async (t) => {
  const database = await freshDatabase(t)
  const plain = await buildApp({}, { database, logger: false })
  const root = await register(plain, 'root@example.com')
  await plain.close()
  await database.db.update(users).set({ is_superuser: true, is_active: false }).where(eq(users.id, root.id))

  const app = await start(t, database)
  t.notOk(app.created(), 'an inactive superuser counts too')
  t.same(await emails(database), ['root@example.com'])
})
