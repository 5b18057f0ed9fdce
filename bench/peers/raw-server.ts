import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import postgres from 'postgres'
import { POOL } from '../../db/client.js'
import { ref } from '../../schemas/common.js'
import { ItemIdParams, ItemPageSchema, ItemSchema } from '../../schemas/item.js'
import { main } from '../child.js'
import { TaskFields } from '../tasks.js'

const COLUMNS = 'id, name, description, price, in_stock, created_at'
const TASK_COLUMNS = 'id, created_at, updated_at, title, status, priority, estimate, due, remind_at, done, tags'
// Whitelisted, as a hand-written route does: the sort is SQL text, not a parameter. Ties by id
// in the sort's direction, as plinth's (its (priority, id) index serves both).
const TASK_SORTS = { id: 'id', priority: 'priority, id', '-priority': 'priority desc, id desc' } as const

/**
 * The reference the figures start from: bare Fastify and postgres.js with its defaults
 * (prepared statements, pipelining), one query per request, the same response schemas as plinth.
 * No batching, no security headers, no plugins: what a hand-written route costs.
 */
main(async () => {
  // The same pool size as plinth's postgres.js client.
  const sql = postgres(process.env.BENCH_DATABASE_URL ?? '', { max: POOL, onnotice: () => {} })
  const app = Fastify({ logger: false }).withTypeProvider<TypeBoxTypeProvider>()
  app.addSchema(ItemSchema)
  app.addSchema(ItemPageSchema)
  app.addHook('onClose', () => sql.end({ timeout: 1 }))

  app.get('/items/:item_id', { schema: { params: ItemIdParams, response: { 200: ref(ItemSchema), 404: Type.Null() } } }, async (request, reply) => {
    const [row] = await sql.unsafe(`select ${COLUMNS} from items where id = $1`, [request.params.item_id], { prepare: true })
    if (!row) return reply.code(404).send(null)
    return row as never
  })

  const Page = Type.Object({ offset: Type.Integer({ minimum: 0, default: 0 }), limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }) })
  app.get('/items', { schema: { querystring: Page, response: { 200: ref(ItemPageSchema) } } }, async (request) => {
    const { offset, limit } = request.query
    // Two queries, as a typical app does; the total is a plain count(*), which reads the whole table.
    const [rows, [count]] = await Promise.all([
      sql.unsafe(`select ${COLUMNS} from items order by id limit $1 offset $2`, [limit, offset], { prepare: true }),
      sql`select count(*)::int as total from items`
    ])
    const total = (count as { total: number }).total
    return { items: rows as never, total, offset, limit, has_next: offset + rows.length < total }
  })

  // The task rows as plinth's resource writes them: its fields and the three the server sets.
  const Task = Type.Object({
    id: Type.Integer(),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
    ...TaskFields.properties
  })
  const TaskQuery = Type.Object({
    status: Type.Optional(TaskFields.properties.status),
    sort: Type.Union(Object.keys(TASK_SORTS).map((key) => Type.Literal(key)), { default: 'id' }),
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 })
  })
  app.get('/tasks', { schema: { querystring: TaskQuery, response: { 200: Type.Array(Task) } } }, async (request) => {
    const { status, sort, limit } = request.query
    const order = TASK_SORTS[sort as keyof typeof TASK_SORTS]
    // One query per request, the filter as a parameter; no total, as plinth's list sends none unasked.
    const rows = status === undefined
      ? await sql.unsafe(`select ${TASK_COLUMNS} from tasks order by ${order} limit $1`, [limit], { prepare: true })
      : await sql.unsafe(`select ${TASK_COLUMNS} from tasks where status = $1 order by ${order} limit $2`, [status, limit], { prepare: true })
    return rows as never
  })
  return app
})
