import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { Type } from '@sinclair/typebox'
import { eq } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { API_PREFIX, type App } from '../../../app.js'
import type { Clock } from '../../../db/clock.js'
import { users } from '../../../db/schema.js'
import { rowMatcher } from '../../../routes/resources/event-filters.js'
import resourcePlugin, { type ResourceOptions } from '../../../routes/resources/index.js'
import { build, login, movableClock, newAccount, superuser } from '../../support/app.js'
import { FILTER_CASES, FILTER_ROWS, TASK_KINDS, filterQuery } from '../../support/filter-cases.js'
import { isEvent, listening, nextEvent, openStream, type OpenStream } from '../../support/event-stream.js'
import { TaskFields, createTask } from '../../support/tasks.js'

const TASKS = `${API_PREFIX}/tasks`

/** The app with these resources, its own clock when given, listening on 127.0.0.1. */
async function serve (t: Test, resources: ResourceOptions[], clock?: Clock) {
  const app = await build(t, {}, clock === undefined ? {} : { clock })
  for (const options of resources) await app.register(resourcePlugin, { prefix: API_PREFIX, ...options })
  return { app, base: await listening(app) }
}

const tasks = (options: Partial<ResourceOptions> = {}): ResourceOptions => ({ name: 'tasks', fields: TaskFields, ...options })

async function write (app: App, method: 'PATCH' | 'DELETE', id: number, payload?: object, headers: Record<string, string> = {}) {
  const res = await app.inject({ method, url: `${TASKS}/${id}`, payload, headers })
  if (res.statusCode >= 300) throw new Error(`${method} ${id}: ${res.statusCode} ${res.payload}`)
  return res.payload === '' ? undefined : res.json()
}

/** The next `count` events, in order. */
async function events (stream: OpenStream, count: number) {
  const received = []
  for (let i = 0; i < count; i++) received.push(await nextEvent(stream))
  return received
}

t.test('created, updated and deleted arrive with their id and the row as the list shows it', async (t) => {
  const { app, base } = await serve(t, [tasks()])
  const stream = await openStream(t, `${base}${TASKS}/events`)
  t.equal(stream.status, 200)
  t.match(stream.headers['content-type'], /^text\/event-stream/)
  t.equal(stream.headers['cache-control'], 'no-store', 'no proxy keeps or holds back the events')
  t.same(await stream.next(), { retry: '3000' }, 'first the reconnection hint')
  t.same(await stream.next(), { id: '0' }, 'then the position, so a reconnect before any event misses nothing')

  const task = await createTask(app, { title: 'one', tags: ['a'] })
  const created = await nextEvent(stream)
  t.equal(created.event, 'created')
  const listed = (await app.inject({ method: 'GET', url: `${TASKS}/` })).payload
  t.equal(`[${created.data}]`, listed, 'the data is the row exactly as the list sends it')
  await write(app, 'PATCH', task.id, { done: true })
  const updated = await nextEvent(stream)
  t.equal(updated.event, 'updated')
  t.equal(JSON.parse(updated.data!).done, true)
  await write(app, 'DELETE', task.id)
  const deleted = await nextEvent(stream)
  t.equal(deleted.event, 'deleted')
  t.equal(JSON.parse(deleted.data!).id, task.id, 'a deleted row is sent as it was')
  t.ok(BigInt(created.id!) < BigInt(updated.id!) && BigInt(updated.id!) < BigInt(deleted.id!), 'ids grow')
})

t.test('the list\'s filters choose the events; an update that leaves them sends nothing', async (t) => {
  const { app, base } = await serve(t, [tasks()])
  const stream = await openStream(t, `${base}${TASKS}/events?status=open&priority[gte]=3&tags[contains]=x&title[in]=a,b,c`)
  t.equal(stream.status, 200)
  await createTask(app, { title: 'z', priority: 5, tags: ['x'] })
  await createTask(app, { title: 'a', priority: 1, tags: ['x'] })
  const b = await createTask(app, { title: 'b', priority: 4, tags: ['x', 'y'] })
  const event = await nextEvent(stream)
  t.equal(JSON.parse(event.data!).title, 'b', 'title not in the list, then priority too low: neither sent')
  await write(app, 'PATCH', b.id, { status: 'done' })
  await write(app, 'PATCH', b.id, { status: 'open', priority: 3 })
  const back = await nextEvent(stream)
  t.equal(back.event, 'updated', 'the update that took b out of the filters was not sent; the one that brought it back is')
  t.same(JSON.parse(back.data!).priority, 3)
})

t.test('filters as the list takes them: a bad one is a 422 naming it', async (t) => {
  const { app } = await serve(t, [tasks()])
  const cases: Array<[string, string, string]> = [
    ['colour=red', '/colour', 'is not a filter: the fields are'],
    ['priority[contains]=3', '/priority[contains]', 'is not a filter: priority (integer) takes'],
    ['limit=5', '/limit', 'is a parameter of the list, not of the event stream'],
    ['sort=-priority', '/sort', 'is a parameter of the list, not of the event stream'],
    ['priority=high', '/priority', 'must be integer'],
    ['lastEventId=abc', '/lastEventId', 'must match pattern']
  ]
  for (const [query, path, message] of cases) {
    const res = await app.inject({ method: 'GET', url: `${TASKS}/events?${query}` })
    t.equal(res.statusCode, 422, query)
    t.match(res.json().errors, [{ path: `/querystring${path}`, message: new RegExp(message.replace(/[[\]()]/g, '\\$&')) }], query)
  }
  for (const id of ['abc', '-1', '1.5', '99999999999999999999']) {
    const res = await app.inject({ method: 'GET', url: `${TASKS}/events`, headers: { 'last-event-id': id } })
    t.equal(res.statusCode, 422, `Last-Event-ID: ${id}`)
    t.same(res.json().errors, [{ path: '/headers/last-event-id', message: 'must be the id of an event: digits, as the stream sent it' }])
  }
})

t.test('resuming with Last-Event-ID sends what was missed, then live, nothing twice', async (t) => {
  const { app, base } = await serve(t, [tasks()])
  const first = await openStream(t, `${base}${TASKS}/events`)
  const made = []
  for (const title of ['a', 'b', 'c']) made.push(await createTask(app, { title }))
  const [a, b, c] = await events(first, 3)
  first.close()

  const resumed = await openStream(t, `${base}${TASKS}/events`, { 'last-event-id': a!.id! })
  const backlog = await events(resumed, 2)
  t.same(backlog.map((event) => event.id), [b!.id, c!.id], 'the events after the resume point, from the log')
  await createTask(app, { title: 'd' })
  const live = await nextEvent(resumed)
  t.equal(JSON.parse(live.data!).title, 'd', 'then live')

  const byQuery = await openStream(t, `${base}${TASKS}/events?lastEventId=${b!.id}`)
  t.same((await events(byQuery, 2)).map((event) => JSON.parse(event.data!).title), ['c', 'd'], 'lastEventId does the same for a new EventSource')

  const current = await openStream(t, `${base}${TASKS}/events`, { 'last-event-id': live.id! })
  await createTask(app, { title: 'e' })
  t.equal(JSON.parse((await nextEvent(current)).data!).title, 'e', 'resuming at the head sends nothing old')
  t.notOk(current.blocks.some((block) => isEvent(block) && block.id === live.id), 'nor the event it resumed after')
})

t.test('streams opened while writes run each see every later event once, in order', async (t) => {
  const { app, base } = await serve(t, [tasks()])
  const watcher = await openStream(t, `${base}${TASKS}/events`)
  const WRITES = 40
  const writes = (async () => {
    for (let i = 0; i < WRITES; i++) await createTask(app, { title: `w${i}` })
  })()
  const all = await events(watcher, 5)
  // Resumes from several points while the writes go on: each catches up through the log, then live.
  const resumed = await Promise.all(all.map((event) => openStream(t, `${base}${TASKS}/events`, { 'last-event-id': event.id! })))
  await writes
  const ids = [...all, ...await events(watcher, WRITES - 5)].map((event) => event.id!)
  for (const [i, stream] of resumed.entries()) {
    const received = (await events(stream, WRITES - 1 - i)).map((event) => event.id!)
    t.same(received, ids.slice(i + 1), `resumed after event ${i + 1}: all that followed, once each, in order`)
  }
})

t.test('a resume point the log no longer holds gets a reset, then live', async (t) => {
  const time = movableClock()
  const { app, base } = await serve(t, [tasks()], time.clock)
  const stream = await openStream(t, `${base}${TASKS}/events`)
  await createTask(app, { title: 'old' })
  await createTask(app, { title: 'older' })
  const [old] = await events(stream, 2)
  stream.close()
  time.advance(25 * 3600_000)
  t.ok(await app.plinthChanges.purge() > 0, 'the log past its retention is purged')

  const resumed = await openStream(t, `${base}${TASKS}/events`, { 'last-event-id': old!.id! })
  const reset = await nextEvent(resumed)
  t.equal(reset.event, 'reset')
  t.equal(reset.data, '{}')
  t.ok(BigInt(reset.id!) > BigInt(old!.id!), 'the reset moves the resume point to the present')
  await createTask(app, { title: 'new' })
  t.equal(JSON.parse((await nextEvent(resumed)).data!).title, 'new')
})

t.test('heartbeats: a comment every eventHeartbeatSeconds', async (t) => {
  const { base } = await serve(t, [tasks({ eventHeartbeatSeconds: 0.02 })])
  const stream = await openStream(t, `${base}${TASKS}/events`)
  t.same(await stream.next((block) => block.comment !== undefined), { comment: 'ping' })
  t.same(await stream.next((block) => block.comment !== undefined), { comment: 'ping' }, 'and again')
})

t.test('a heartbeat after events the filters left out moves the resume point past them', async (t) => {
  const { app, base } = await serve(t, [tasks({ eventHeartbeatSeconds: 0.02 })])
  const stream = await openStream(t, `${base}${TASKS}/events?status=done`)
  const { id: start } = await stream.next((block) => block.id !== undefined)
  await createTask(app, { title: 'open one' })
  const moved = await stream.next((block) => block.id !== undefined && block.id !== start)
  t.equal(moved.data, undefined, 'an id line alone: EventSource fires no event for it')
  t.ok(BigInt(moved.id!) > BigInt(start!))
})

t.test('owner mode: each user hears only their own rows, a superuser all; the read guard applies', async (t) => {
  const { app, base } = await serve(t, [tasks({ owner: true })])
  t.equal((await app.inject({ method: 'GET', url: `${TASKS}/events` })).statusCode, 401, 'anonymous')
  t.equal((await app.inject({ method: 'GET', url: `${TASKS}/events`, headers: { authorization: 'Bearer nonsense' } })).statusCode, 401)
  const ada = await newAccount(app)
  const bob = await newAccount(app)
  const root = await superuser(app, 'root-events@example.com')
  const adas = await openStream(t, `${base}${TASKS}/events`, ada.session.headers)
  const all = await openStream(t, `${base}${TASKS}/events`, root.session.headers)
  const filtered = await openStream(t, `${base}${TASKS}/events?owner_id=${ada.user.id}`, bob.session.headers)
  await createTask(app, { title: 'Bob\'s' }, bob.session.headers)
  await createTask(app, { title: 'Ada\'s' }, ada.session.headers)
  await createTask(app, { title: 'Bob\'s again' }, bob.session.headers)
  t.same(JSON.parse((await nextEvent(adas)).data!).title, 'Ada\'s', 'Ada hears her row, not Bob\'s')
  t.same((await events(all, 3)).map((event) => JSON.parse(event.data!).title), ['Bob\'s', 'Ada\'s', 'Bob\'s again'], 'the superuser hears all')
  const bobs = await openStream(t, `${base}${TASKS}/events`, bob.session.headers)
  await createTask(app, { title: 'Bob\'s last' }, bob.session.headers)
  t.same(JSON.parse((await nextEvent(bobs)).data!).title, 'Bob\'s last')
  t.notOk(filtered.blocks.some(isEvent), 'filtering on another owner hears nothing')

  await app.plinthDb.db.update(users).set({ is_active: false }).where(eq(users.id, ada.user.id))
  t.equal((await app.inject({ method: 'GET', url: `${TASKS}/events`, headers: ada.session.headers })).statusCode, 403, 'a deactivated user cannot open one')
})

t.test('a stolen token cannot listen forever: the stream ends when the access token expires', async (t) => {
  const time = movableClock()
  const { app, base } = await serve(t, [tasks({ owner: true, eventHeartbeatSeconds: 0.02 })], time.clock)
  const { session, email } = await newAccount(app)
  const stream = await openStream(t, `${base}${TASKS}/events`, session.headers)
  await createTask(app, { title: 'heard' }, session.headers)
  await nextEvent(stream)
  time.advance(31 * 60_000)
  t.equal(await stream.ended, true, 'ended cleanly once the clock passed the token\'s exp')
  const again = await app.inject({ method: 'GET', url: `${TASKS}/events`, headers: session.headers })
  t.equal(again.statusCode, 401, 'and the token opens no other')
  const fresh = await login(app, email)
  t.equal((await openStream(t, `${base}${TASKS}/events`, fresh.headers)).status, 200, 'a new token opens a new stream')
})

t.test('a stolen token cannot listen past its session: a logout, a logout-all or a deactivation ends its stream at the next heartbeat', async (t) => {
  const { app, base } = await serve(t, [tasks({ owner: true, eventHeartbeatSeconds: 0.02 })])
  const { user, email, session } = await newAccount(app)
  const other = await login(app, email)
  const stolen = await openStream(t, `${base}${TASKS}/events`, session.headers)
  const kept = await openStream(t, `${base}${TASKS}/events`, other.headers)
  const ended = async (refresh: string, url: string, headers = {}) =>
    (await app.inject({ method: 'POST', url: `${API_PREFIX}/auth/${url}`, headers, payload: { refresh_token: refresh } })).statusCode
  t.equal(await ended(session.refresh_token, 'logout'), 204)
  t.equal(await stolen.ended, true, 'the logged-out session\'s stream ends')
  await createTask(app, { title: 'still heard' }, other.headers)
  t.match(await nextEvent(kept), { event: 'created' }, 'the same user\'s other session listens on')
  t.equal(await ended(other.refresh_token, 'logout-all', other.headers), 204)
  t.equal(await kept.ended, true, 'logout-all ends it too')

  const again = await login(app, email)
  const deactivated = await openStream(t, `${base}${TASKS}/events`, again.headers)
  await app.plinthDb.db.update(users).set({ is_active: false }).where(eq(users.id, user.id))
  t.equal(await deactivated.ended, true, 'a deactivated account\'s stream ends')
})

t.test('owner mode: a superuser made ordinary stops hearing other owners\' rows at the next heartbeat', async (t) => {
  const { app, base } = await serve(t, [tasks({ owner: true, eventHeartbeatSeconds: 0.02 })])
  const root = await superuser(app, 'demoted@example.com')
  const stream = await openStream(t, `${base}${TASKS}/events`, root.session.headers)
  const { session } = await newAccount(app)
  await createTask(app, { title: 'someone else\'s' }, session.headers)
  t.match(await nextEvent(stream), { event: 'created' }, 'a superuser hears every owner')
  await app.plinthDb.db.update(users).set({ is_superuser: false }).where(eq(users.email, 'demoted@example.com'))
  t.equal(await stream.ended, true, 'the stream ends; a new one hears only the demoted user\'s own rows')
})

t.test('a slow subscriber is cut once its unread events pass eventBufferBytes, and resumes', async (t) => {
  const BIG = 200_000
  const { app, base } = await serve(t, [{ name: 'docs', fields: Type.Object({ body: Type.String({ maxLength: BIG }) }), eventBufferBytes: 64 * 1024 }])
  const { port } = new URL(base)
  const serverSockets: Socket[] = []
  app.server.on('connection', (socket: Socket) => serverSockets.push(socket))
  const client = connect(Number(port), '127.0.0.1')
  await once(client, 'connect')
  client.write(`GET ${API_PREFIX}/docs/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`)
  let received = ''
  const closed = new Promise<void>((resolve) => {
    client.once('close', () => resolve())
    // The server may reset the connection rather than end it: either is a cut.
    client.on('error', () => {})
  })
  client.setEncoding('utf8')
  client.on('data', (chunk: string) => { received += chunk })
  // Read until the stream's position (headers and first blocks), then stop reading: the kernel's buffers fill, then the server's.
  while (!received.includes('id: ')) await once(client, 'data')
  client.pause()
  const server = serverSockets.at(-1)!
  const cut = once(server, 'close')
  const body = 'x'.repeat(BIG)
  let written = 0
  const connection = { open: true }
  cut.then(() => { connection.open = false }, () => {})
  while (connection.open && written < 400) {
    const res = await app.inject({ method: 'POST', url: `${API_PREFIX}/docs/`, payload: { body } })
    if (res.statusCode !== 201) throw new Error(`POST docs: ${res.statusCode} ${res.payload}`)
    written++
  }
  await cut
  t.ok(written < 400, `the server cut the connection after ${written} writes, ${Math.round(written * BIG / 1e6)} MB of events`)
  // Now read what the kernel held: whole events, then the cut (no end of the chunked body).
  client.resume()
  await closed
  const blocks = received.slice(received.indexOf('\r\n\r\n') + 4)
  t.notOk(blocks.endsWith('0\r\n\r\n'), 'the stream was cut, not ended')
  const ids = [...blocks.matchAll(/^id: (\d+)$/gm)].map((match) => match[1]!)
  // The first id is the stream's position; the last may head an event the cut left without its data.
  t.ok(ids.length >= 1 && ids.length - 1 < written, `the client got at most ${ids.length - 1} of ${written} events before the cut`)

  const whole = Math.max(ids.length - 2, 0)
  const resumed = await openStream(t, `${base}${API_PREFIX}/docs/events`, { 'last-event-id': ids[whole]! })
  const missed = await events(resumed, written - whole)
  t.equal(missed.length, written - whole, 'resuming from the last whole event sends every event after it')
})

t.test('closing the app ends its open streams', async (t) => {
  const { app, base } = await serve(t, [tasks()])
  const stream = await openStream(t, `${base}${TASKS}/events`)
  await stream.next()
  await app.close()
  t.equal(await stream.ended, true)
})

t.test('the stream and its ticket route are in the OpenAPI document; off with routes.events false', async (t) => {
  const { app } = await serve(t, [tasks({ owner: true }), { name: 'quiet', fields: TaskFields, routes: { events: false } }, { name: 'notes' }])
  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const stream = document.paths[`${TASKS}/events`].get
  t.equal(stream.operationId, 'streamTasksEvents')
  t.ok(stream.responses['200'].content['text/event-stream'])
  t.ok(stream.parameters.some((parameter: { name: string }) => parameter.name === 'priority[gte]'), 'the list\'s filters')
  t.notOk(stream.parameters.some((parameter: { name: string }) => parameter.name === 'limit'))
  t.same(stream.security, [{ OAuth2PasswordBearer: [] }])
  t.equal(document.paths[`${TASKS}/events/tickets`].post.operationId, 'createTasksEventsTicket')
  t.notOk(document.paths[`${API_PREFIX}/quiet/events`])
  t.notOk(document.paths[`${API_PREFIX}/notes/events`], 'records have no fields to follow')
})

t.test('the stream\'s filters agree with the list\'s SQL, NULLs, code point order and instants included', async (t) => {
  const { app } = await serve(t, [tasks()])
  for (const row of FILTER_ROWS) await createTask(app, row)
  const listed = (await app.inject({ method: 'GET', url: `${TASKS}/?limit=100` })).json() as Array<Record<string, unknown>>
  for (const filters of FILTER_CASES) {
    const query = filterQuery(filters)
    const res = await app.inject({ method: 'GET', url: `${TASKS}/?limit=100&${query}` })
    t.equal(res.statusCode, 200, query.toString())
    const matches = rowMatcher(filters, TASK_KINDS)
    t.same(listed.filter((row) => matches(row)).map((row) => row.id), res.json().map((row: { id: number }) => row.id), decodeURIComponent(query.toString()))
  }
})
