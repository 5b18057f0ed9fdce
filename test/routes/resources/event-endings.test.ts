import t, { type Test } from 'tap'
import { API_PREFIX, type App } from '../../../app.js'
import type { Config } from '../../../config.js'
import type { DatabaseClient } from '../../../db/client.js'
import resourcePlugin from '../../../routes/resources/index.js'
import { PASSWORD, build, login, newAccount, superuser } from '../../support/app.js'
import { TEST_DATABASE_URL, connectTo, freshDatabase, freshPostgresUrl } from '../../support/database.js'
import { listening, nextEvent, openStream } from '../../support/event-stream.js'
import { TaskFields, createTask } from '../../support/tasks.js'

const TASKS = `${API_PREFIX}/tasks`
const AUTH = `${API_PREFIX}/auth`

/**
 * A heartbeat of an hour: the guard's own check at each ping never comes within a test, so only
 * the account notice (db/sessions.ts, through LISTEN) can end a stream here.
 */
async function serve (t: Test, settings: Partial<Config> = {}, database?: DatabaseClient) {
  const app = await build(t, settings, database === undefined ? {} : { database })
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields, owner: true, eventHeartbeatSeconds: 3600 })
  return { app, base: await listening(app) }
}

/** A stream of the tasks, which must open. */
async function follow (t: Test, base: string, headers: Record<string, string>, query = '') {
  const stream = await openStream(t, `${base}${TASKS}/events${query}`, headers)
  t.equal(stream.status, 200, 'the stream opens')
  return stream
}

const post = (app: App, url: string, headers: Record<string, string>, payload?: object) =>
  app.inject({ method: 'POST', url, headers, ...(payload === undefined ? {} : { payload }) })

t.test('a stolen token\'s stream ends after the victim\'s logout, without waiting for the heartbeat; the other session listens on', async (t) => {
  const { app, base } = await serve(t)
  const { email, session } = await newAccount(app)
  const other = await login(app, email)
  const stolen = await follow(t, base, session.headers)
  const kept = await follow(t, base, other.headers)
  t.equal((await post(app, `${AUTH}/logout`, {}, { refresh_token: session.refresh_token })).statusCode, 204)
  t.equal(await stolen.ended, true, 'the logged-out session\'s stream ends')
  await createTask(app, { title: 'still heard' }, other.headers)
  t.match(await nextEvent(kept), { event: 'created' }, 'the same user\'s other session keeps listening')
})

t.test('a stolen token\'s stream ends after logout-all, every session of the account with it', async (t) => {
  const { app, base } = await serve(t)
  const { email, session } = await newAccount(app)
  const other = await login(app, email)
  const stolen = await follow(t, base, session.headers)
  const own = await follow(t, base, other.headers)
  const { session: bystander } = await newAccount(app)
  const unrelated = await follow(t, base, bystander.headers)
  t.equal((await post(app, `${AUTH}/logout-all`, other.headers)).statusCode, 204)
  t.same(await Promise.all([stolen.ended, own.ended]), [true, true], 'both of the account\'s streams end')
  await createTask(app, { title: 'another account\'s' }, bystander.headers)
  t.match(await nextEvent(unrelated), { event: 'created' }, 'another account\'s stream is untouched')
})

t.test('a deactivation, a demotion or a deletion by a superuser ends the account\'s streams at once', async (t) => {
  const { app, base } = await serve(t)
  const root = await superuser(app)
  const patch = (id: number, payload: object) => app.inject({ method: 'PATCH', url: `${API_PREFIX}/users/${id}`, headers: root.session.headers, payload })

  const target = await newAccount(app)
  const deactivated = await follow(t, base, target.session.headers)
  t.equal((await patch(target.user.id, { is_active: false })).statusCode, 200)
  t.equal(await deactivated.ended, true, 'deactivated: its stream ends')

  const boss = await superuser(app, 'boss@example.com')
  const demoted = await follow(t, base, boss.session.headers)
  t.equal((await patch(boss.user.id, { is_superuser: false })).statusCode, 200)
  t.equal(await demoted.ended, true, 'a superuser made ordinary: the stream that heard every owner ends')

  const leaving = await newAccount(app)
  const deleted = await follow(t, base, leaving.session.headers)
  t.equal((await app.inject({ method: 'DELETE', url: `${API_PREFIX}/users/${leaving.user.id}`, headers: root.session.headers })).statusCode, 204)
  t.equal(await deleted.ended, true, 'deleted: its stream ends')
})

t.test('a password change ends the account\'s streams at once', async (t) => {
  const { app, base } = await serve(t)
  const { session } = await newAccount(app)
  const stolen = await follow(t, base, session.headers)
  const res = await app.inject({ method: 'PATCH', url: `${API_PREFIX}/users/me`, headers: session.headers, payload: { password: 'a new horse battery', current_password: PASSWORD } })
  t.equal(res.statusCode, 200, res.payload)
  t.equal(await stolen.ended, true)
})

t.test('a stream opened with a ticket ends when the session that asked for the ticket logs out', async (t) => {
  const { app, base } = await serve(t)
  const { session } = await newAccount(app)
  const { ticket } = (await post(app, `${TASKS}/events/tickets`, session.headers)).json() as { ticket: string }
  const stream = await follow(t, base, {}, `?ticket=${encodeURIComponent(ticket)}`)
  t.equal((await post(app, `${AUTH}/logout`, {}, { refresh_token: session.refresh_token })).statusCode, 204)
  t.equal(await stream.ended, true)
})

t.test('a logout on one instance ends the stream another instance holds, through the database\'s notification', async (t) => {
  const shared = await freshDatabase(t)
  // One deployment: the same key signs and checks tokens on both.
  const key = { SECRET_KEY: 'one key for both instances, 32 bytes or more' }
  const { app: holder, base } = await serve(t, key, shared)
  const { app: other } = await serve(t, key, shared)
  const { email, session } = await newAccount(other)
  const kept = await login(other, email)
  const stream = await follow(t, base, session.headers)
  const still = await follow(t, base, kept.headers)
  t.equal((await post(other, `${AUTH}/logout`, {}, { refresh_token: session.refresh_token })).statusCode, 204)
  t.equal(await stream.ended, true, 'the holder heard the other instance\'s logout')
  await createTask(holder, { title: 'heard' }, kept.headers)
  t.match(await nextEvent(still), { event: 'created' })
})

t.test('through a transaction pooler without a listen URL, nothing is notified: the streams check at each poll instead', { skip: TEST_DATABASE_URL === undefined && 'PostgreSQL only' }, async (t) => {
  const url = await freshPostgresUrl(t)
  const database = await connectTo(url, { poolMode: 'transaction', listenUrl: undefined })
  t.teardown(() => database.close())
  const { app, base } = await serve(t, { DATABASE_URL: url, DATABASE_POOL_MODE: 'transaction' }, database)
  const { email, session } = await newAccount(app)
  const other = await login(app, email)
  const stolen = await follow(t, base, session.headers)
  const kept = await follow(t, base, other.headers)
  t.equal((await post(app, `${AUTH}/logout`, {}, { refresh_token: session.refresh_token })).statusCode, 204)
  t.equal(await stolen.ended, true, 'ended by the poll\'s check')
  await createTask(app, { title: 'still heard' }, other.headers)
  t.match(await nextEvent(kept), { event: 'created' })
})
