import t, { type Test } from 'tap'
import { API_PREFIX } from '../../../app.js'
import type { Config } from '../../../config.js'
import type { Filter } from '../../../db/resource-lists.js'
import changesPlugin, { type ChangesOptions } from '../../../plugins/changes.js'
import { rowMatcher } from '../../../routes/resources/event-filters.js'
import resourcePlugin, { type ResourceOptions } from '../../../routes/resources/index.js'
import { MAX_IN_VALUES } from '../../../routes/resources/list-query.js'
import { build, newAccount } from '../../support/app.js'
import { listening, openStream } from '../../support/event-stream.js'
import { TaskFields } from '../../support/tasks.js'
import { until } from '../../support/until.js'

const TASKS = `${API_PREFIX}/tasks`

/** The app with the tasks; the change feed's options given, as RESOURCES_FILE's resources get them from the settings. */
async function serve (t: Test, settings: Partial<Config> = {}, options: Partial<ResourceOptions> = {}, feed: ChangesOptions = {}) {
  const app = await build(t, settings)
  await app.register(changesPlugin, feed)
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields, ...options })
  return { app, base: await listening(app) }
}

const values = (count: number) => Array.from({ length: count }, (_, i) => `v${i}`).join(',')

t.test(`an in filter of more than ${MAX_IN_VALUES} values is a 422 naming it, on the list and on the stream`, async (t) => {
  const { app } = await serve(t)
  const detail = `has ${MAX_IN_VALUES + 1} values: an in filter takes at most ${MAX_IN_VALUES}`
  for (const url of [`${TASKS}/`, `${TASKS}/events`]) {
    const res = await app.inject({ method: 'GET', url: `${url}?title[in]=${values(MAX_IN_VALUES + 1)}` })
    t.equal(res.statusCode, 422, url)
    t.same(res.json().errors, [{ path: '/querystring/title[in]', message: detail }], url)
    t.match(res.json().detail, '/querystring/title[in]', 'the detail names the parameter')
    const repeated = new URLSearchParams(Array.from({ length: MAX_IN_VALUES + 1 }, (_, i): [string, string] => ['title[in]', `v${i}`]))
    t.equal((await app.inject({ method: 'GET', url: `${url}?${repeated}` })).statusCode, 422, `${url}, the parameter repeated`)
  }
  t.equal((await app.inject({ method: 'GET', url: `${TASKS}/?title[in]=${values(MAX_IN_VALUES)}` })).statusCode, 200, 'the bound itself is taken')
})

t.test('one account cannot hold more streams open than maxStreamsPerAccount (EVENTS_MAX_STREAMS_PER_ACCOUNT): 429 naming the cap, with Retry-After', async (t) => {
  const { app, base } = await serve(t, {}, { owner: true }, { maxStreamsPerAccount: 2 })
  const { session } = await newAccount(app)
  const streams = [await openStream(t, `${base}${TASKS}/events`, session.headers), await openStream(t, `${base}${TASKS}/events?priority=1`, session.headers)]
  t.same(streams.map((stream) => stream.status), [200, 200])
  const refused = await openStream(t, `${base}${TASKS}/events`, session.headers)
  t.equal(refused.status, 429)
  t.equal(refused.headers['retry-after'], '5')
  await refused.ended
  t.match(JSON.parse(refused.body()), {
    status: 429,
    code: 'RESOURCE_TOO_MANY_STREAMS',
    detail: 'At most 2 event streams may be open at once per account on this server; close one first'
  })
  const { session: other } = await newAccount(app)
  t.equal((await openStream(t, `${base}${TASKS}/events`, other.headers)).status, 200, 'another account has places of its own')

  streams[0]!.close()
  await until('the closed stream\'s place', () => app.plinthStreams.size === 2 ? true : undefined)
  t.equal((await openStream(t, `${base}${TASKS}/events`, session.headers)).status, 200, 'a closed stream gives its place back')
})

t.test('one client address cannot hold more streams open than maxStreamsPerAddress (EVENTS_MAX_STREAMS_PER_ADDRESS), signed in or not; request.ip as TRUST_PROXY says', async (t) => {
  const { base } = await serve(t, { TRUST_PROXY: true, PUBLIC_URL: 'http://127.0.0.1' }, {}, { maxStreamsPerAddress: 2 })
  const from = (address: string) => ({ 'x-forwarded-for': address })
  t.equal((await openStream(t, `${base}${TASKS}/events`, from('203.0.113.7'))).status, 200)
  t.equal((await openStream(t, `${base}${TASKS}/events`, from('203.0.113.7'))).status, 200)
  const refused = await openStream(t, `${base}${TASKS}/events`, from('203.0.113.7'))
  t.equal(refused.status, 429)
  await refused.ended
  t.match(JSON.parse(refused.body()), { code: 'RESOURCE_TOO_MANY_STREAMS', detail: 'At most 2 event streams may be open at once per client address on this server; close one first' })
  t.equal((await openStream(t, `${base}${TASKS}/events`, from('203.0.113.8'))).status, 200, 'another address has places of its own')
})

t.test('an open stream holds no place of OVERLOAD_MAX_IN_FLIGHT: other requests are still served', async (t) => {
  const { app, base } = await serve(t, { OVERLOAD_MAX_IN_FLIGHT: 1 })
  const streams = [await openStream(t, `${base}${TASKS}/events`), await openStream(t, `${base}${TASKS}/events`)]
  t.same(streams.map((stream) => stream.status), [200, 200])
  t.equal((await app.inject({ method: 'GET', url: `${TASKS}/` })).statusCode, 200)
})

t.test('an in filter, compiled into a Set, matches exactly the rows one of its values\' equality filters matches', async (t) => {
  const kinds = { id: 'integer', title: 'text', estimate: 'number', due: 'date', remind_at: 'timestamp', done: 'boolean' } as const
  const rows: Array<Record<string, unknown>> = [
    { id: 0, title: 'apple', estimate: 0, due: '2026-01-01', remind_at: '2026-01-01T10:00:00.000Z', done: true },
    { id: -0, title: 'Apple', estimate: -0, due: '2026-12-31', remind_at: '2026-01-01T10:00:00.001Z', done: false },
    { id: 3, title: '\u{1D49C}stral', estimate: 'NaN', due: null, remind_at: '0001-01-01T00:00:00.000Z' },
    { id: 4, title: null, estimate: 'Infinity', remind_at: 'not an instant' },
    { id: 5, title: '\uE000', estimate: 1e300, remind_at: '9999-12-31T23:59:59.999Z' }
  ]
  const lists: Array<[keyof typeof kinds, unknown[]]> = [
    ['id', [0, 5, 7]],
    ['title', ['apple', '\u{1D49C}stral', 'APPLE', '\uE000']],
    ['estimate', [-0, 'NaN', 'Infinity', 2.5]],
    ['due', ['2026-12-31', '2027-01-01']],
    ['remind_at', ['2026-01-01T12:00:00.001+02:00', '0001-01-01T00:00:00Z', '2026-01-01T10:00:00.0004Z', 'nonsense']],
    ['done', [false]]
  ]
  for (const [column, list] of lists) {
    const inList = rowMatcher([{ column, op: 'in', value: list }], kinds)
    const anyEqual = list.map((value) => rowMatcher([{ column, op: 'eq', value } as Filter], kinds))
    t.same(rows.map((row) => inList(row)), rows.map((row) => anyEqual.some((matches) => matches(row))), `${column}[in]=${list.join(',')}`)
  }
})
