import { eq } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { API_PREFIX } from '../../../app.js'
import type { Clock } from '../../../db/clock.js'
import { users } from '../../../db/schema.js'
import resourcePlugin, { type ResourceOptions } from '../../../routes/resources/index.js'
import { build, login, movableClock, newAccount, register, type Session } from '../../support/app.js'
import { listening, nextEvent, openStream } from '../../support/event-stream.js'
import { TaskFields, createTask } from '../../support/tasks.js'

const TASKS = `${API_PREFIX}/tasks`

async function serve (t: Test, resources: ResourceOptions[], clock?: Clock) {
  const app = await build(t, {}, clock === undefined ? {} : { clock })
  for (const options of resources) await app.register(resourcePlugin, { prefix: API_PREFIX, ...options })
  return { app, base: await listening(app) }
}

type Served = Awaited<ReturnType<typeof serve>>

async function ticketFor ({ app }: Served, session: Session, resource = 'tasks'): Promise<string> {
  const res = await app.inject({ method: 'POST', url: `${API_PREFIX}/${resource}/events/tickets`, headers: session.headers })
  if (res.statusCode !== 200) throw new Error(`ticket: ${res.statusCode} ${res.payload}`)
  return res.json().ticket
}

const withTicket = (ticket: string, query = '') => `${TASKS}/events?ticket=${encodeURIComponent(ticket)}${query}`

function refused (status: number, code: string, detail: string) {
  return { status, code, detail }
}

t.test('a ticket opens the stream for EventSource, as its user, once', async (t) => {
  const served = await serve(t, [{ name: 'tasks', fields: TaskFields, owner: true }])
  const { app, base } = served
  const ada = await newAccount(app)
  const bob = await newAccount(app)
  const res = await app.inject({ method: 'POST', url: `${TASKS}/events/tickets`, headers: ada.session.headers })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['cache-control'], 'no-store')
  t.equal(res.json().expires_in, 30)
  const { ticket } = res.json()

  const stream = await openStream(t, `${base}${withTicket(ticket, '&title[contains]=report')}`)
  t.equal(stream.status, 200, 'no Authorization header: the ticket stands for it')
  await createTask(app, { title: 'Bob\'s report' }, bob.session.headers)
  await createTask(app, { title: 'Ada\'s list' }, ada.session.headers)
  await createTask(app, { title: 'Ada\'s report' }, ada.session.headers)
  t.equal(JSON.parse((await nextEvent(stream)).data!).title, 'Ada\'s report', 'Ada\'s rows only, filtered')

  const resumed = await openStream(t, `${base}${withTicket(await ticketFor(served, ada.session), '&lastEventId=0')}`)
  t.same((await Promise.all([nextEvent(resumed), nextEvent(resumed)])).map((event) => JSON.parse(event.data!).title), ['Ada\'s list', 'Ada\'s report'],
    'a new EventSource resumes with a new ticket and lastEventId')

  const anonymous = await app.inject({ method: 'POST', url: `${TASKS}/events/tickets` })
  t.equal(anonymous.statusCode, 401, 'a ticket needs the bearer token')
})

t.test('a ticket used twice is refused the second time', async (t) => {
  const served = await serve(t, [{ name: 'tasks', fields: TaskFields, owner: true }])
  const { session } = await newAccount(served.app)
  const ticket = await ticketFor(served, session)
  const first = await openStream(t, `${served.base}${withTicket(ticket)}`)
  t.equal(first.status, 200)
  const again = await served.app.inject({ method: 'GET', url: withTicket(ticket) })
  t.equal(again.statusCode, 401)
  t.match(again.json(), refused(401, 'AUTH_INVALID_TOKEN', 'Invalid access token: the ticket is unknown or already used'))

  // Two at once: the DELETE ... RETURNING gives it to one of them.
  const raced = await ticketFor(served, session)
  const statuses = await Promise.all([0, 1, 2].map(async () => (await openStream(t, `${served.base}${withTicket(raced)}`)).status))
  t.same(statuses.sort(), [200, 401, 401], 'one of three racing requests gets the stream')
})

t.test('an expired ticket is refused (the clock moved past its 30 s)', async (t) => {
  const time = movableClock()
  const served = await serve(t, [{ name: 'tasks', fields: TaskFields, owner: true }], time.clock)
  const { session } = await newAccount(served.app)
  const ticket = await ticketFor(served, session)
  time.advance(31_000)
  const res = await served.app.inject({ method: 'GET', url: withTicket(ticket) })
  t.match(res.json(), refused(401, 'AUTH_INVALID_TOKEN', 'Invalid access token: the ticket has expired'))
})

t.test('a ticket for another resource is refused', async (t) => {
  const served = await serve(t, [{ name: 'tasks', fields: TaskFields, owner: true }, { name: 'notes', fields: TaskFields, owner: true }])
  const { session } = await newAccount(served.app)
  const ticket = await ticketFor(served, session, 'notes')
  const res = await served.app.inject({ method: 'GET', url: withTicket(ticket) })
  t.match(res.json(), refused(401, 'AUTH_INVALID_TOKEN', 'Invalid access token: the ticket is for another resource'))
  const spent = await served.app.inject({ method: 'GET', url: `${API_PREFIX}/notes/events?ticket=${encodeURIComponent(ticket)}` })
  t.equal(spent.statusCode, 401, 'and the attempt spent it')
})

t.test('a ticket after its session was logged out is refused', async (t) => {
  const served = await serve(t, [{ name: 'tasks', fields: TaskFields, owner: true }])
  const { session } = await newAccount(served.app)
  const ticket = await ticketFor(served, session)
  const out = await served.app.inject({ method: 'POST', url: `${API_PREFIX}/auth/logout`, payload: { refresh_token: session.refresh_token } })
  t.equal(out.statusCode, 204)
  const res = await served.app.inject({ method: 'GET', url: withTicket(ticket) })
  t.match(res.json(), refused(401, 'AUTH_INVALID_TOKEN', 'Invalid access token: its session has ended'))
})

t.test('a ticket of a user since deactivated is refused', async (t) => {
  const served = await serve(t, [{ name: 'tasks', fields: TaskFields, owner: true }])
  const { user, session } = await newAccount(served.app)
  const ticket = await ticketFor(served, session)
  await served.app.plinthDb.db.update(users).set({ is_active: false }).where(eq(users.id, user.id))
  const res = await served.app.inject({ method: 'GET', url: withTicket(ticket) })
  t.match(res.json(), refused(403, 'AUTH_INACTIVE_USER', 'This account is inactive'))
})

t.test('a ticket keeps the read guard: a scope removed since is refused', async (t) => {
  const app = await build(t)
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields, guards: { read: app.requireScopes('tasks:read') } })
  const served = { app, base: await listening(app) }
  const reader = await register(app, 'reader@example.com')
  await app.plinthDb.db.update(users).set({ scopes: 'me,tasks:read' }).where(eq(users.id, reader.id))
  const session = await login(app, 'reader@example.com')
  const ok = await openStream(t, `${served.base}${withTicket(await ticketFor(served, session))}`)
  t.equal(ok.status, 200)
  const ticket = await ticketFor(served, session)
  await app.plinthDb.db.update(users).set({ scopes: 'me' }).where(eq(users.id, reader.id))
  const res = await app.inject({ method: 'GET', url: withTicket(ticket) })
  t.match(res.json(), refused(403, 'AUTH_INSUFFICIENT_SCOPE', 'This needs the scope(s): tasks:read'))
})

t.test('a long-lived access token in the URL is not accepted', async (t) => {
  const served = await serve(t, [{ name: 'tasks', fields: TaskFields, owner: true }])
  const { session } = await newAccount(served.app)
  const asTicket = await served.app.inject({ method: 'GET', url: withTicket(session.access_token) })
  t.match(asTicket.json(), refused(401, 'AUTH_INVALID_TOKEN', 'Invalid access token: the ticket is unknown or already used'))
  const refresh = await served.app.inject({ method: 'GET', url: withTicket(session.refresh_token) })
  t.equal(refresh.statusCode, 401)
  const named = await served.app.inject({ method: 'GET', url: `${TASKS}/events?access_token=${session.access_token}` })
  t.match(named.json(), refused(401, 'AUTH_NOT_AUTHENTICATED', 'Not authenticated: send an access token as "Authorization: Bearer <token>"'), 'access_token authenticates nothing')
  const both = await served.app.inject({ method: 'GET', url: withTicket(await ticketFor(served, session)), headers: session.headers })
  t.equal(both.statusCode, 422, 'a ticket and a header together are refused')
  t.same(both.json().errors, [{ path: '/querystring/ticket', message: 'comes with an Authorization header: send one or the other' }])
})

t.test('a stream opened with a ticket ends when the token that asked for it expires', async (t) => {
  const time = movableClock()
  const served = await serve(t, [{ name: 'tasks', fields: TaskFields, owner: true, eventHeartbeatSeconds: 0.02 }], time.clock)
  const { session } = await newAccount(served.app)
  time.advance(29 * 60_000)
  const ticket = await ticketFor(served, session)
  const stream = await openStream(t, `${served.base}${withTicket(ticket)}`)
  t.equal(stream.status, 200)
  time.advance(2 * 60_000)
  t.equal(await stream.ended, true, 'the minute the access token had left, not a fresh token\'s 30')
})

t.test('a resource without a read guard has no tickets: EventSource needs none', async (t) => {
  const served = await serve(t, [{ name: 'tasks', fields: TaskFields }])
  const { session } = await newAccount(served.app)
  t.equal((await served.app.inject({ method: 'POST', url: `${TASKS}/events/tickets`, headers: session.headers })).statusCode, 404)
  const res = await served.app.inject({ method: 'GET', url: `${TASKS}/events?ticket=abc` })
  t.equal(res.statusCode, 422, 'ticket is then an unknown parameter')
})
