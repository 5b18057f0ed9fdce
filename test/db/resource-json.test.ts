import { sql } from 'drizzle-orm'
import t from 'tap'
import { createRepository, type Repository } from '../../db/crud.js'
import { resourceJson } from '../../db/resource-json.js'
import { buildResourceTable } from '../../db/resource-table.js'
import { prepareResourceTable } from '../../db/resources.js'
import { users } from '../../db/schema.js'
import { alwaysPresent, readFields, rowSchema, type JsonSchema } from '../../schemas/fields.js'
import { freshDatabase, unversioned } from '../support/database.js'

const { db } = await freshDatabase(t)

// Every kind, each required, defaulted, nullable and optional-without-value somewhere.
const fields = readFields({
  type: 'object',
  required: ['title', 'rank'],
  properties: {
    title: { type: 'string' },
    rank: { type: 'integer' },
    score: { type: 'number', default: 0.5 },
    ratio: { type: 'number', nullable: true },
    done: { type: 'boolean', default: false },
    flag: { type: 'boolean' },
    at: { type: 'string', format: 'date-time', nullable: true },
    when: { type: 'string', format: 'date-time' },
    day: { type: 'string', format: 'date' },
    tags: { type: 'array', items: { type: 'string' }, default: [] },
    labels: { type: 'array', items: { type: 'string' } },
    meta: { type: 'object', nullable: true },
    extra: { type: 'object' },
    state: { type: 'string', enum: ['open', 'shut'], default: 'open' }
  }
})

const ROWS: JsonSchema[] = [
  { title: 'plain', rank: 1 },
  {
    title: 'quote " backslash \\ slash / tab \t newline \n bell \u0007 é 😀 \u2028',
    rank: -2147483648,
    score: 1e21,
    ratio: 0.1,
    done: true,
    flag: false,
    at: '2026-11-24T10:00:00.120Z',
    when: '0001-01-01T00:00:00.000Z',
    day: '2024-02-29',
    tags: ['a "b"', "it's", 'x,y', '{}', 'NULL', ''],
    labels: [],
    meta: { nested: { list: [1, 'two', null, true], 'key "q"': 1.5e-7 } },
    extra: {},
    state: 'shut'
  },
  { title: '', rank: 2147483647, score: -0.000001, ratio: null, at: null, meta: null, day: '9999-12-31', when: '9999-12-31T23:59:59.999Z' }
]

for (const owner of [false, true]) {
  t.test(`PostgreSQL writes the row as the decoded row reads${owner ? ', with its owner' : ''}`, async (t) => {
    const table = owner ? 'json_owned' : 'json_rows'
    await prepareResourceTable(db, { table, fields, owner })
    const [user] = await db.insert(users).values({ email: `${table}@example.com`, hashed_password: 'x' }).returning()
    const drizzleTable = buildResourceTable(table, fields, { owner })
    const whole = createRepository(db, drizzleTable) as unknown as Repository<Record<string, unknown>, Record<string, unknown>>
    const order = Object.keys(rowSchema(table, fields, { owner }).properties)
    const json = createRepository<typeof drizzleTable, { id: number, json: string }>(db, drizzleTable, { selection: { id: drizzleTable.id, json: resourceJson(fields, { owner }) }, batchUpdates: true })
    for (const values of ROWS) {
      const created = await json.create({ ...values, ...(owner ? { owner_id: user!.id } : {}) } as never)
      const row = unversioned(await whole.get(created.id))
      // The row the driver decodes (instants as ISO strings), an optional field without value left out.
      for (const field of fields) if (!alwaysPresent(field) && row![field.name] === null) delete row![field.name]
      const written = JSON.parse(created.json) as Record<string, unknown>
      t.same(written, row, `created: ${String(values.title).slice(0, 12)}`)
      t.same(Object.keys(written), order.filter((name) => name in row!), 'the members in the order of the row schema')
      t.equal((await json.get(created.id))!.json, created.json, 'read as it was written')
      const changed = JSON.parse((await json.update(created.id, { title: 'changed' } as never))!.json)
      t.same(changed, { ...row, title: 'changed', updated_at: changed.updated_at })
    }
    t.match((await json.get(1))!.json, /^\{"id":1,"created_at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z",/, 'compact, ISO 8601 in UTC')
  })
}

t.test('an instant is UTC whatever the session time zone', async (t) => {
  const table = buildResourceTable('json_rows', fields)
  const json = createRepository<typeof table, { id: number, json: string }>(db, table, { selection: { id: table.id, json: resourceJson(fields) }, batchUpdates: true })
  const { id } = await json.create({ title: 'zoned', rank: 1, at: '2026-06-01T12:00:00.000Z' } as never)
  await db.transaction(async (tx) => {
    await tx.execute(sql`set local time zone 'Asia/Kolkata'`)
    const row = await json.get(id, { tx })
    t.equal(JSON.parse(row!.json).at, '2026-06-01T12:00:00.000Z')
  })
})
