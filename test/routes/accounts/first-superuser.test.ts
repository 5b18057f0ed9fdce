import t from 'tap'
import { buildApp } from '../../../app.js'
import { users } from '../../../db/schema.js'
import { captureLogs, login, register } from '../../support/app.js'
import { freshDatabase } from '../../support/database.js'

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
