import t, { type Test } from 'tap'
import { API_PREFIX } from '../../../app.js'
import type { Config } from '../../../config.js'
import type { Filter } from '../../../db/resource-lists.js'
import { rowMatcher } from '../../../routes/resources/event-filters.js'
import resourcePlugin, { type ResourceOptions } from '../../../routes/resources/index.js'
import { MAX_IN_VALUES } from '../../../routes/resources/list-query.js'
import { build } from '../../support/app.js'
import { listening } from '../../support/event-stream.js'
import { TaskFields } from '../../support/tasks.js'

const TASKS = `${API_PREFIX}/tasks`

async function serve (t: Test, settings: Partial<Config> = {}, options: Partial<ResourceOptions> = {}) {
  const app = await build(t, settings)
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
